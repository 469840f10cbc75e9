import fc from 'fast-check';
import ipaddr from 'ipaddr.js';
import { describe, expect, it } from 'vitest';
import { addressBytes } from './address.js';

/** ipaddr.js's reading of a client address: four-part decimal IPv4 or IPv6, mapped IPv6 as IPv4. */
function reference(text: string): number[] | undefined {
  if (ipaddr.IPv4.isValidFourPartDecimal(text)) return ipaddr.IPv4.parse(text).toByteArray();
  return ipaddr.IPv6.isValid(text) ? ipaddr.process(text).toByteArray() : undefined;
}

describe('addressBytes', () => {
  it('reads every IPv4 and IPv6 address as ipaddr.js does (mapped IPv6 as its IPv4 address)', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.ipV4(),
          fc.ipV6(),
          fc.ipV4().map((v4) => `::ffff:${v4}`),
        ),
        (text) => {
          expect(addressBytes(text)).toEqual(reference(text));
        },
      ),
      { numRuns: 5_000 },
    );
  });

  it('refuses what ipaddr.js refuses, and the numeric IPv4 forms', () => {
    const refused = ['010.0.0.1', '10.1', '0x0a000001', '1:2:3:4:5:6:7:8:9', '1::2::3', ':1:2:3:4:5:6:7', ':::'];
    const more = ['1:2:3:4:5:6:7:8::', '12345::', '1.2.3.4::', '::1.2.3.4:5', '10.0.0.1 ', '', '1:2:3:4:5:6:7'];
    for (const text of [...refused, ...more]) expect(addressBytes(text), text).toBeUndefined();
    expect(addressBytes('fe80::1%eth0')).toEqual(reference('fe80::1'));
    expect(addressBytes('::ffff:a00:1')).toEqual([10, 0, 0, 1]);
  });
});
