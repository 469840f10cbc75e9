import { describe, expect, it } from 'vitest';
import { byIp } from './keys.js';
import { ipKey } from './ip.js';

describe('ipKey', () => {
  it.each([
    ['203.0.113.7', '203.0.113.7'],
    ['::ffff:203.0.113.7', '203.0.113.7'],
    ['::FFFF:cb00:7107', '203.0.113.7'],
    ['2001:db8:1234:5678:9abc:def0:1:2', '2001:db8:1234:5600::/56'],
    ['2001:db8:1234:56ff::1', '2001:db8:1234:5600::/56'],
    ['2001:db8::1', '2001:db8::/56'],
    ['::1', '::/56'],
    ['fe80::1%eth0', 'fe80::/56'],
    ['2001:db8::192.0.2.1', '2001:db8::/56'],
  ])('%s -> %s', (address, key) => {
    expect(ipKey(address)).toBe(key);
  });

  it('keeps every address of one /56 in one key and a neighbouring /56 in another', () => {
    expect(ipKey('2001:db8:aa:bb00::1')).toBe(ipKey('2001:db8:aa:bbff:ffff:ffff:ffff:ffff'));
    expect(ipKey('2001:db8:aa:bb00::1')).not.toBe(ipKey('2001:db8:aa:bc00::1'));
    expect(ipKey('2001:db8:aa:bb01::1', 64)).toBe('2001:db8:aa:bb01::/64');
    expect(ipKey('2001:db8:aa:bb01::1', 128)).toBe('2001:db8:aa:bb01:0:0:0:1/128');
  });

  it.each([
    '',
    'localhost',
    '1.2.3',
    '256.1.1.1',
    '1.2.3.4.5',
    '2001:db8:::1',
    '1:2:3:4:5:6:7:8:9',
    'g::1',
    '::ffff:1.2.3.999',
    '1::2::3',
  ])('refuses %j', (address) => {
    expect(ipKey(address)).toBeUndefined();
  });
});

describe('byIp', () => {
  const req = (ip: string | undefined, xff?: string) => ({
    headers: xff === undefined ? {} : { 'x-forwarded-for': xff },
    socket: { remoteAddress: ip },
  });
  it('ignores X-Forwarded-For unless told how many proxies are in front', () => {
    expect(byIp()(req('10.0.0.1', '6.6.6.6'))).toBe('ip:10.0.0.1');
    expect(byIp({ trustProxy: 1 })(req('10.0.0.1', '6.6.6.6, 198.51.100.4'))).toBe('ip:198.51.100.4');
    expect(byIp({ trustProxy: 2 })(req('10.0.0.1', '6.6.6.6, 198.51.100.4'))).toBe('ip:6.6.6.6');
    // Fewer entries than trusted proxies: the client reached an inner proxy directly, and the furthest entry
    // is the client (the socket is one of the proxies: keying by it would put everyone in one bucket).
    expect(byIp({ trustProxy: 3 })(req('10.0.0.1', '198.51.100.4'))).toBe('ip:198.51.100.4');
  });
  it('prefers the framework-computed req.ip and has no key for a request without an address', () => {
    expect(byIp()({ headers: {}, ip: '::ffff:192.0.2.9', socket: { remoteAddress: '10.0.0.1' } })).toBe('ip:192.0.2.9');
    expect(byIp()(req(undefined))).toBeUndefined();
    expect(byIp()(req('not-an-ip'))).toBeUndefined();
  });
  it('validates its options', () => {
    expect(() => byIp({ ipv6Subnet: 129 })).toThrow(/ipv6Subnet must be an integer in 0..128, got 129/);
    expect(() => byIp({ trustProxy: -1 })).toThrow(/trustProxy must be an integer >= 0, got -1/);
  });
});

describe('ipKey input', () => {
  it('is typed: a non-string address or a subnet outside 0..128 names the bad value', () => {
    expect(() => ipKey(42 as never)).toThrow(/address must be a string, got 42/);
    expect(() => ipKey('::1', Number.NaN)).toThrow(/ipv6Subnet must be an integer in 0..128, got NaN/);
    expect(() => ipKey('::1', 129)).toThrow(/got 129/);
  });
});

// Hardening: addresses that used to put whole groups of clients into one bucket.
describe('IPv6 addresses that embed an IPv4 address are keyed by it', () => {
  it.each([
    ['64:ff9b::198.51.100.7', '198.51.100.7'], // NAT64 (RFC 6052 well-known prefix)
    ['64:ff9b::c633:6408', '198.51.100.8'],
    ['::1.2.3.4', '1.2.3.4'], // IPv4-compatible
    ['::ffff:0:203.0.113.9', '203.0.113.9'], // IPv4-translated
    ['2002:c633:6401::1', '198.51.100.1'], // 6to4: the site's IPv4
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', '192.0.2.45'], // Teredo: the client's public IPv4, inverted
  ])('%s -> %s', (address, key) => {
    expect(ipKey(address)).toBe(key);
  });
  it('keeps clients behind one NAT64 gateway or Teredo relay apart, and loopback apart from ::1.2.3.4', () => {
    expect(ipKey('64:ff9b::198.51.100.1')).not.toBe(ipKey('64:ff9b::198.51.100.2'));
    expect(ipKey('2001:0:4136:e378:8000:63bf:3fff:fdd2')).not.toBe(ipKey('2001:0:4136:e378:8000:63bf:3fff:fdd3'));
    expect(ipKey('::1')).toBe('::/56');
    expect(ipKey('::')).toBe('::/56');
    expect(ipKey('::1.2.3.4')).not.toBe(ipKey('::1'));
  });
});

describe('byIp behind proxies: the forms proxies really send', () => {
  const xff = (value: string | string[]) => ({
    headers: { 'x-forwarded-for': value },
    socket: { remoteAddress: '10.0.0.1' },
  });
  it.each([
    ['198.51.100.1:50001', 'ip:198.51.100.1'],
    ['[2001:db8:1::1]', 'ip:2001:db8:1::/56'],
    ['[2001:db8:1::1]:443', 'ip:2001:db8:1::/56'],
    ['2001:db8:1::1', 'ip:2001:db8:1::/56'],
    ['6.6.6.6, 198.51.100.1:50001', 'ip:198.51.100.1'],
    [' 198.51.100.1 ', 'ip:198.51.100.1'],
  ])('X-Forwarded-For %j -> %s', (header, key) => {
    expect(byIp({ trustProxy: 1 })(xff(header))).toBe(key);
  });
  it('an entry it cannot read gives no key, never the proxy address', () => {
    for (const garbage of ['garbage', 'unknown', '198.51.100.1:port', '[2001:db8::1', '', '1.2.3.4:5:6']) {
      expect(byIp({ trustProxy: 1 })(xff(garbage))).toBeUndefined();
    }
  });
  it('reads RFC 7239 Forwarded only when told to, with quotes, brackets and ports', () => {
    const fwd = (value: string) => ({
      headers: { forwarded: value, 'x-forwarded-for': '6.6.6.6' },
      socket: { remoteAddress: '10.0.0.1' },
    });
    const byForwarded = byIp({ trustProxy: 1, proxyHeader: 'forwarded' });
    expect(byForwarded(fwd('for=198.51.100.1'))).toBe('ip:198.51.100.1');
    expect(byForwarded(fwd('for=192.0.2.43, for="[2001:db8:cafe::17]:4711";proto=https'))).toBe(
      'ip:2001:db8:cafe::/56',
    );
    expect(byForwarded(fwd('proto=https;For="198.51.100.9:80";by=203.0.113.43'))).toBe('ip:198.51.100.9');
    expect(byForwarded(fwd('for=unknown'))).toBeUndefined();
    expect(byForwarded(fwd('for=_hidden'))).toBeUndefined();
    // The default header is X-Forwarded-For: a client-written Forwarded header is not read.
    expect(byIp({ trustProxy: 1 })(fwd('for=198.51.100.1'))).toBe('ip:6.6.6.6');
    expect(() => byIp({ proxyHeader: 'x-real-ip' as never })).toThrow(
      /proxyHeader must be 'x-forwarded-for' or 'forwarded', got "x-real-ip"/,
    );
  });
});
