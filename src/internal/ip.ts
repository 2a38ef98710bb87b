// IP addresses in one place: parsing (IPv4 as a 32-bit number, IPv6 as eight 16-bit groups or
// a 128-bit number), normalizing what a socket or a header gives, and CIDR ranges (checked by
// node's `BlockList`). Used by the proxy trust (`http/proxy.ts`), the rate-limit key
// (`rate-limit/key.ts`) and the webhook address classes (`webhook/ip-ranges.ts`).
import { BlockList, isIP } from 'node:net';

/**
 * The family of an address literal as `net.isIP` tells it: 4, 6, or 0 for none.
 *
 * @example
 * ```ts
 * ipFamily('192.0.2.1'); // 4
 * ipFamily('example.com'); // 0
 * ```
 */
export function ipFamily(text: string): 0 | 4 | 6 {
  return isIP(text) as 0 | 4 | 6;
}

/**
 * Drops the brackets of `[2001:db8::1]` (and anything after `]`, such as a port).
 *
 * @example
 * ```ts
 * stripBrackets('[2001:db8::1]:443'); // '2001:db8::1'
 * ```
 */
export function stripBrackets(text: string): string {
  if (text.charCodeAt(0) !== 91 /* [ */) return text;
  const end = text.indexOf(']');
  return text.slice(1, end === -1 ? undefined : end);
}

/**
 * Drops the zone id of `fe80::1%eth0`.
 *
 * @example
 * ```ts
 * stripZone('fe80::1%eth0'); // 'fe80::1'
 * ```
 */
export function stripZone(text: string): string {
  const zone = text.indexOf('%');
  return zone === -1 ? text : text.slice(0, zone);
}

/**
 * A client address as a socket or `X-Forwarded-For` gives it, reduced to the address alone:
 * brackets, an IPv4 address's port and the zone id dropped, an IPv4-mapped IPv6 address
 * (`::ffff:192.0.2.1`) unwrapped to its IPv4 address. Anything else is returned trimmed.
 *
 * @example
 * ```ts
 * normalizeIp('::ffff:192.0.2.1'); // '192.0.2.1'
 * normalizeIp('[2001:db8::1]:8443'); // '2001:db8::1'
 * normalizeIp('192.0.2.1:8080'); // '192.0.2.1'
 * ```
 */
export function normalizeIp(raw: string): string {
  let ip = raw.trim();
  if (ip.startsWith('[')) {
    ip = stripBrackets(ip);
  } else if (ip.indexOf(':') !== -1 && ip.indexOf(':') === ip.lastIndexOf(':')) {
    ip = ip.slice(0, ip.indexOf(':')); // IPv4 with a port
  }
  ip = stripZone(ip);
  if (/^::ffff:/i.test(ip) && isIP(ip.slice(7)) === 4) ip = ip.slice(7);
  return ip;
}

/**
 * A dotted quad (as `net.isIPv4` accepts it) as an unsigned 32-bit number.
 *
 * @example
 * ```ts
 * ipv4ToNumber('10.0.0.1'); // 167772161
 * ```
 */
export function ipv4ToNumber(text: string): number {
  return text.split('.').reduce((acc, octet) => acc * 256 + Number(octet), 0);
}

/**
 * An IPv6 address (as `net.isIPv6` accepts it, without brackets or zone id) as its eight
 * 16-bit groups, an embedded IPv4 tail (`::ffff:192.0.2.1`) included.
 *
 * @example
 * ```ts
 * ipv6Groups('2001:db8::1'); // [0x2001, 0xdb8, 0, 0, 0, 0, 0, 1]
 * ipv6Groups('::ffff:192.0.2.1'); // [0, 0, 0, 0, 0, 0xffff, 0xc000, 0x0201]
 * ```
 */
export function ipv6Groups(text: string): number[] {
  let tail: number[] = [];
  let body = text;
  const lastColon = text.lastIndexOf(':');
  if (text.includes('.', lastColon)) {
    const v4 = ipv4ToNumber(text.slice(lastColon + 1));
    tail = [Math.floor(v4 / 0x10000), v4 % 0x10000];
    body = text.slice(0, text.endsWith('::', lastColon + 1) ? lastColon + 1 : lastColon);
  }
  const hex = (part: string) => (part === '' ? [] : part.split(':').map((g) => parseInt(g, 16)));
  const gap = body.indexOf('::');
  if (gap === -1) return [...hex(body), ...tail];
  const head = hex(body.slice(0, gap));
  const rest = [...hex(body.slice(gap + 2)), ...tail];
  return [...head, ...Array<number>(8 - head.length - rest.length).fill(0), ...rest];
}

/**
 * An IPv6 address (as {@link ipv6Groups} takes it) as a 128-bit number.
 *
 * @example
 * ```ts
 * ipv6ToBigInt('::1'); // 1n
 * ```
 */
export function ipv6ToBigInt(text: string): bigint {
  return ipv6Groups(text).reduce((acc, group) => (acc << 16n) | BigInt(group), 0n);
}

/** A CIDR range taken apart: `10.0.0.0/8` → `{ address: '10.0.0.0', family: 4, prefix: 8 }`. */
export interface Cidr {
  address: string;
  family: 4 | 6;
  prefix: number;
}

/**
 * Parses `address` or `address/prefix` (a bare address is its own /32 or /128). Throws what
 * `invalid` builds, with the reason, when the address is not an IP literal or the prefix is
 * not a whole number within the family's bits.
 *
 * @example
 * ```ts
 * parseCidr('fc00::/7', (reason) => new TypeError(reason)); // { address: 'fc00::', family: 6, prefix: 7 }
 * ```
 */
export function parseCidr(range: string, invalid: (reason: string) => Error): Cidr {
  const slash = range.indexOf('/');
  const address = slash === -1 ? range : range.slice(0, slash);
  const family = ipFamily(address);
  if (family === 0) throw invalid('is not an IP address or CIDR');
  const max = family === 4 ? 32 : 128;
  const prefixText = slash === -1 ? undefined : range.slice(slash + 1);
  if (prefixText !== undefined && !/^\d{1,3}$/.test(prefixText)) {
    throw invalid('has an invalid prefix length');
  }
  const prefix = prefixText === undefined ? max : Number(prefixText);
  if (prefix > max) throw invalid('has an invalid prefix length');
  return { address, family, prefix };
}

/** A set of CIDR ranges, checked in O(ranges) by node's `BlockList`. */
export interface IpRanges {
  /** Whether `ip` (an address literal; anything else is in no range) lies in one of them. */
  has(ip: string): boolean;
}

/**
 * Builds the {@link IpRanges} of CIDR strings; see {@link parseCidr} for `invalid`.
 *
 * @example
 * ```ts
 * const ranges = createIpRanges(['10.0.0.0/8', '::1'], (range, reason) => new TypeError(`${range} ${reason}`));
 * ranges.has('10.1.2.3'); // true
 * ```
 */
export function createIpRanges(
  ranges: readonly string[],
  invalid: (range: string, reason: string) => Error,
): IpRanges {
  const list = new BlockList();
  for (const range of ranges) {
    const { address, family, prefix } = parseCidr(range, (reason) => invalid(range, reason));
    list.addSubnet(address, prefix, family === 4 ? 'ipv4' : 'ipv6');
  }
  return {
    has(ip) {
      const family = ipFamily(ip);
      return family !== 0 && list.check(ip, family === 4 ? 'ipv4' : 'ipv6');
    },
  };
}
