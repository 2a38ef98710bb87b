import { describe, expect, it } from 'vitest';
import {
  createIpRanges,
  ipFamily,
  ipv4ToNumber,
  ipv6Groups,
  ipv6ToBigInt,
  normalizeIp,
  parseCidr,
  stripBrackets,
  stripZone,
} from '../../src/internal/ip.js';

const invalid = (reason: string) => new TypeError(reason);

describe('the IP module', () => {
  it('parses IPv4 and IPv6, embedded IPv4 tails included', () => {
    expect(ipv4ToNumber('255.255.255.255')).toBe(0xffff_ffff);
    expect(ipv6Groups('2001:db8::1')).toEqual([0x2001, 0xdb8, 0, 0, 0, 0, 0, 1]);
    expect(ipv6Groups('::')).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    expect(ipv6Groups('::ffff:192.0.2.1')).toEqual([0, 0, 0, 0, 0, 0xffff, 0xc000, 0x0201]);
    expect(ipv6Groups('::192.0.2.1')).toEqual([0, 0, 0, 0, 0, 0, 0xc000, 0x0201]);
    expect(ipv6Groups('1:2:3:4:5:6:7:8')).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(ipv6ToBigInt('ff00::')).toBe(0xff00n << 112n);
  });

  it('normalizes what sockets and headers give', () => {
    expect(normalizeIp(' ::ffff:192.0.2.1 ')).toBe('192.0.2.1');
    expect(normalizeIp('[2001:db8::1]:8443')).toBe('2001:db8::1');
    expect(normalizeIp('192.0.2.1:8080')).toBe('192.0.2.1');
    expect(normalizeIp('fe80::1%eth0')).toBe('fe80::1');
    expect(stripBrackets('[::1')).toBe('::1');
    expect(stripZone('::1')).toBe('::1');
    expect(ipFamily('not an address')).toBe(0);
  });

  it('parses CIDR ranges strictly', () => {
    expect(parseCidr('10.0.0.0/8', invalid)).toEqual({ address: '10.0.0.0', family: 4, prefix: 8 });
    expect(parseCidr('::1', invalid)).toEqual({ address: '::1', family: 6, prefix: 128 });
    for (const range of ['10.0.0.0/', '10.0.0.0/8/9', '10.0.0.0/33', '::/129', '10.0.0.0/-1']) {
      expect(() => parseCidr(range, invalid), range).toThrow(/invalid prefix length/);
    }
    for (const range of ['', 'example.com/8', '10.0.0/8']) {
      expect(() => parseCidr(range, invalid), range).toThrow(/not an IP address/);
    }
  });

  it('checks addresses against ranges of both families', () => {
    const ranges = createIpRanges(['10.0.0.0/8', 'fc00::/7'], (r, why) => new TypeError(r + why));
    expect(ranges.has('10.200.0.1')).toBe(true);
    expect(ranges.has('11.0.0.1')).toBe(false);
    expect(ranges.has('fd00::1')).toBe(true);
    expect(ranges.has('2001:db8::1')).toBe(false);
    expect(ranges.has('not an address')).toBe(false);
    expect(() => createIpRanges(['10.0.0.0/99'], (r, why) => new TypeError(`${r} ${why}`))).toThrow(
      '10.0.0.0/99 has an invalid prefix length',
    );
  });
});
