import { ipFamily, ipv4ToNumber, ipv6ToBigInt, parseCidr, stripZone } from '../../internal/ip.js';

/**
 * What kind of destination an IP address is, as far as a webhook sender is concerned. Only
 * `public` addresses are fit to send to; every other kind reaches the sender's own host or
 * network, or nothing at all.
 *
 * - `loopback`: `127.0.0.0/8`, `::1`.
 * - `private`: RFC 1918 (`10/8`, `172.16/12`, `192.168/16`), shared address space for
 *   carrier-grade NAT (`100.64/10`), deprecated IPv6 site-local (`fec0::/10`).
 * - `link-local`: `169.254/16` (cloud metadata services live at `169.254.169.254`), `fe80::/10`.
 * - `unique-local`: `fc00::/7`.
 * - `multicast`: `224/4`, `ff00::/8`.
 * - `unspecified`: `0.0.0.0/8` ("this network"; `0.0.0.0` reaches the local host on Linux), `::`.
 * - `reserved`: every other special-purpose range: limited broadcast and the former class E
 *   (`240/4`), IETF protocol assignments (`192.0.0/24`), documentation (`192.0.2/24`,
 *   `198.51.100/24`, `203.0.113/24`, `2001:db8::/32`, `3fff::/20`), benchmarking
 *   (`198.18/15`, `2001:2::/48`), the 6to4 relay anycast (`192.88.99/24`), discard-only
 *   (`100::/64`), local-use NAT64 (`64:ff9b:1::/48`), `2001::/23` (Teredo and other IETF
 *   assignments), and all IPv6 outside global unicast `2000::/3`.
 *
 * @example
 * ```ts
 * const kind: AddressClass = classifyAddress('10.0.0.1'); // 'private'
 * ```
 * @see {@link https://www.iana.org/assignments/iana-ipv4-special-registry/ | IANA IPv4 Special-Purpose Address Registry}
 * @see {@link https://www.iana.org/assignments/iana-ipv6-special-registry/ | IANA IPv6 Special-Purpose Address Registry}
 */
export type AddressClass =
  | 'public'
  | 'loopback'
  | 'private'
  | 'link-local'
  | 'unique-local'
  | 'multicast'
  | 'unspecified'
  | 'reserved';

/** The IPv4 ranges that are not public; first match wins, anything else is `public`. */
const IPV4_RANGES: readonly (readonly [cidr: string, kind: AddressClass])[] = [
  ['0.0.0.0/8', 'unspecified'], // RFC 791 "this network"
  ['10.0.0.0/8', 'private'], // RFC 1918
  ['100.64.0.0/10', 'private'], // RFC 6598 shared address space (CGNAT)
  ['127.0.0.0/8', 'loopback'], // RFC 1122
  ['169.254.0.0/16', 'link-local'], // RFC 3927, cloud metadata at 169.254.169.254
  ['172.16.0.0/12', 'private'], // RFC 1918
  ['192.0.0.0/24', 'reserved'], // RFC 6890 IETF protocol assignments (DS-Lite, NAT64 discovery…)
  ['192.0.2.0/24', 'reserved'], // RFC 5737 TEST-NET-1
  ['192.88.99.0/24', 'reserved'], // RFC 7526 deprecated 6to4 relay anycast
  ['192.168.0.0/16', 'private'], // RFC 1918
  ['198.18.0.0/15', 'reserved'], // RFC 2544 benchmarking
  ['198.51.100.0/24', 'reserved'], // RFC 5737 TEST-NET-2
  ['203.0.113.0/24', 'reserved'], // RFC 5737 TEST-NET-3
  ['224.0.0.0/4', 'multicast'], // RFC 5771
  ['240.0.0.0/4', 'reserved'], // RFC 1112 former class E, with 255.255.255.255 broadcast
];

/** How an IPv6 range is classified: a fixed kind, or by the IPv4 address it embeds. */
type V6Rule = AddressClass | ((value: bigint) => AddressClass);

/** The IPv4 address in the low 32 bits. */
const low32 = (value: bigint) => Number(value & 0xffff_ffffn);
/** The IPv4 address in bits 16–47 (6to4, RFC 3056). */
const sixToFour = (value: bigint) => Number((value >> 80n) & 0xffff_ffffn);

/** IPv4-compatible and IPv4-translated forms are deprecated: never a valid destination. */
const deprecatedEmbedding = (value: bigint): AddressClass => {
  const kind = classifyIPv4(low32(value));
  return kind === 'public' ? 'reserved' : kind;
};

/** The IPv6 ranges in order, most specific first; anything unlisted is `reserved`. */
const IPV6_RANGES: readonly (readonly [cidr: string, rule: V6Rule])[] = [
  ['::/128', 'unspecified'],
  ['::1/128', 'loopback'],
  ['::ffff:0:0/96', (v) => classifyIPv4(low32(v))], // RFC 4291 IPv4-mapped
  ['::ffff:0:0:0/96', deprecatedEmbedding], // RFC 2765 IPv4-translated (SIIT)
  ['::/96', deprecatedEmbedding], // RFC 4291 IPv4-compatible, deprecated
  ['64:ff9b::/96', (v) => classifyIPv4(low32(v))], // RFC 6052 NAT64 well-known prefix
  ['64:ff9b:1::/48', 'reserved'], // RFC 8215 local-use NAT64: the embedding is not knowable
  ['100::/64', 'reserved'], // RFC 6666 discard-only
  ['2001::/23', 'reserved'], // RFC 2928 IETF assignments: Teredo 2001::/32, benchmarking, ORCHID
  ['2001:db8::/32', 'reserved'], // RFC 3849 documentation
  ['2002::/16', (v) => classifyIPv4(sixToFour(v))], // RFC 3056 6to4
  ['3fff::/20', 'reserved'], // RFC 9637 documentation
  ['2000::/3', 'public'], // RFC 4291 global unicast
  ['fc00::/7', 'unique-local'], // RFC 4193
  ['fe80::/10', 'link-local'], // RFC 4291
  ['fec0::/10', 'private'], // RFC 3879 deprecated site-local
  ['ff00::/8', 'multicast'], // RFC 4291
];

/** A range of the tables above, parsed once (they are constants: a bad one is a bug here). */
function parseRange<T>(cidr: string, parse: (text: string) => T): { prefix: T; bits: number } {
  const { address, prefix } = parseCidr(cidr, (reason) => new Error(`${cidr} ${reason}`));
  return { prefix: parse(address), bits: prefix };
}

const V4 = IPV4_RANGES.map(([cidr, kind]) => ({ ...parseRange(cidr, ipv4ToNumber), kind }));
const V6 = IPV6_RANGES.map(([cidr, rule]) => ({ ...parseRange(cidr, ipv6ToBigInt), rule }));

function classifyIPv4(value: number): AddressClass {
  for (const { prefix, bits, kind } of V4) {
    const size = 2 ** (32 - bits);
    if (Math.floor(value / size) === Math.floor(prefix / size)) return kind;
  }
  return 'public';
}

function classifyIPv6(value: bigint): AddressClass {
  for (const { prefix, bits, rule } of V6) {
    const shift = BigInt(128 - bits);
    if (value >> shift === prefix >> shift) return typeof rule === 'function' ? rule(value) : rule;
  }
  return 'reserved';
}

/**
 * Classifies an IP address literal, as `net.isIP` accepts it (dotted-quad IPv4, any IPv6
 * spelling, with or without a zone id such as `fe80::1%eth0`). IPv6 forms that embed an
 * IPv4 address are classified by it: IPv4-mapped `::ffff:a.b.c.d`, NAT64 `64:ff9b::/96` and
 * 6to4 `2002::/16` are as public as the address they carry; the deprecated IPv4-compatible
 * `::a.b.c.d` and IPv4-translated `::ffff:0:a.b.c.d` forms are at best `reserved`. Teredo
 * (`2001::/32`) is `reserved`: its client address is obfuscated and it is reached through a
 * relay the sender does not control.
 *
 * Host names are not resolved here, and other IPv4 spellings (`0x7f.1`, `2130706433`) are not
 * IP literals for `net.isIP`: parse URLs with `new URL()`, which normalizes them.
 *
 * @throws TypeError (`code: 'ERR_INVALID_ARG_VALUE'`) when `ip` is not an IP address literal.
 * @example
 * ```ts
 * classifyAddress('169.254.169.254'); // 'link-local'
 * classifyAddress('::ffff:127.0.0.1'); // 'loopback'
 * classifyAddress('2606:4700::1111'); // 'public'
 * ```
 * @see {@link https://www.iana.org/assignments/iana-ipv4-special-registry/ | IANA IPv4 Special-Purpose Address Registry}
 * @see {@link https://www.iana.org/assignments/iana-ipv6-special-registry/ | IANA IPv6 Special-Purpose Address Registry}
 */
export function classifyAddress(ip: string): AddressClass {
  const version = typeof ip === 'string' ? ipFamily(ip) : 0;
  if (version === 0) {
    const error = new TypeError('classifyAddress: not an IP address literal');
    (error as TypeError & { code: string }).code = 'ERR_INVALID_ARG_VALUE';
    throw error;
  }
  if (version === 4) return classifyIPv4(ipv4ToNumber(ip));
  return classifyIPv6(ipv6ToBigInt(stripZone(ip)));
}

/**
 * Whether `ip` is a public address, fit to send a webhook to (see `classifyAddress`).
 * Anything that is not an IP address literal is not public.
 *
 * @example
 * ```ts
 * isPublicAddress('8.8.8.8'); // true
 * isPublicAddress('10.0.0.1'); // false
 * isPublicAddress('example.com'); // false: resolve it first
 * ```
 * @see {@link https://www.iana.org/assignments/iana-ipv4-special-registry/ | IANA IPv4 Special-Purpose Address Registry}
 * @see {@link https://www.iana.org/assignments/iana-ipv6-special-registry/ | IANA IPv6 Special-Purpose Address Registry}
 */
export function isPublicAddress(ip: string): boolean {
  return typeof ip === 'string' && ipFamily(ip) !== 0 && classifyAddress(ip) === 'public';
}
