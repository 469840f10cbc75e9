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

  it.each(['', 'localhost', '1.2.3', '256.1.1.1', '1.2.3.4.5', '2001:db8:::1', '1:2:3:4:5:6:7:8:9', 'g::1', '::ffff:1.2.3.999', '1::2::3'])(
    'refuses %j',
    (address) => {
      expect(ipKey(address)).toBeUndefined();
    },
  );
});

describe('byIp', () => {
  const req = (ip: string | undefined, xff?: string) => ({ headers: xff === undefined ? {} : { 'x-forwarded-for': xff }, socket: { remoteAddress: ip } });
  it('ignores X-Forwarded-For unless told how many proxies are in front', () => {
    expect(byIp()(req('10.0.0.1', '6.6.6.6'))).toBe('ip:10.0.0.1');
    expect(byIp({ trustProxy: 1 })(req('10.0.0.1', '6.6.6.6, 198.51.100.4'))).toBe('ip:198.51.100.4');
    expect(byIp({ trustProxy: 2 })(req('10.0.0.1', '6.6.6.6, 198.51.100.4'))).toBe('ip:6.6.6.6');
    // A proxy count beyond the header's entries falls back to the socket rather than trusting nothing in particular.
    expect(byIp({ trustProxy: 3 })(req('10.0.0.1', '198.51.100.4'))).toBe('ip:10.0.0.1');
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
