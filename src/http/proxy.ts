import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { createIpRanges, type IpRanges, ipFamily, normalizeIp } from '../internal/ip.js';
import { invalidOption } from '../internal/options.js';

export { normalizeIp } from '../internal/ip.js';

/**
 * Which reverse proxies are trusted to say who the client is (`X-Forwarded-For`) and which
 * scheme it used (`X-Forwarded-Proto`).
 *
 * - `false` (default): no proxy; the socket's peer is the client.
 * - a number `n`: the last `n` hops are trusted proxies; the client is the `n`-th address
 *   from the right of `X-Forwarded-For` (the socket peer counting as the rightmost).
 * - CIDR ranges (`'10.0.0.0/8'`, `'::1/128'`), as an array or a comma-separated string:
 *   addresses are walked from the right and skipped while they lie in these ranges.
 *   `'loopback'` (127.0.0.0/8, ::1), `'private'` (10/8, 172.16/12, 192.168/16, fc00::/7)
 *   and `'linklocal'` (169.254/16, fe80::/10) name the usual ranges.
 *
 * The spoofable leftmost entry is never taken on trust.
 */
export type TrustProxy = false | number | string | readonly string[];

/** The client address and scheme of a request, as the trusted proxies report them. */
export interface ProxyTrust {
  /** The client's IP address (IPv4-mapped IPv6 forms unwrapped). */
  clientIp(req: IncomingMessage): string;
  /** Whether the client reached us over HTTPS (own TLS, or a trusted proxy's word). */
  isSecure(req: IncomingMessage): boolean;
  /** True unless this trust is `false`. */
  readonly trustsProxies: boolean;
}

const NAMED_RANGES: ReadonlyMap<string, readonly string[]> = new Map([
  ['loopback', ['127.0.0.0/8', '::1/128']],
  ['private', ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7']],
  ['linklocal', ['169.254.0.0/16', 'fe80::/10']],
]);

function rangesOf(entries: readonly string[]): IpRanges {
  const ranges = entries.flatMap((entry) => {
    const trimmed = entry.trim();
    return NAMED_RANGES.get(trimmed.toLowerCase()) ?? [trimmed];
  });
  return createIpRanges(ranges, (range, reason) =>
    invalidOption(`trustProxy: \`${range}\` ${reason}`),
  );
}

/** The X-Forwarded-For chain and the peer, normalised, kept on the request once read. */
const CHAIN = Symbol('portico.forwardedChain');
type WithChain = IncomingMessage & { [CHAIN]?: readonly string[] };

function forwardedList(value: string | string[] | undefined): string[] {
  if (value === undefined) return [];
  const joined = Array.isArray(value) ? value.join(',') : value;
  return joined
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/**
 * The scheme the `hops`-th trusted proxy from the right was reached with (lower case), from
 * `X-Forwarded-Proto`: its leftmost entry when it names fewer; `undefined` without one.
 */
function forwardedProto(value: string | string[] | undefined, hops: number): string | undefined {
  // the usual field, one proxy's word: no list to make
  if (typeof value === 'string' && !value.includes(',')) {
    const proto = value.trim();
    return proto === '' ? undefined : proto.toLowerCase();
  }
  const protos = forwardedList(value);
  if (protos.length === 0) return undefined;
  return protos[Math.max(0, protos.length - hops)]!.toLowerCase();
}

/**
 * Builds the trust decision once, from the setting.
 *
 * @example
 * ```ts
 * const trust = createProxyTrust(1); // one proxy (a load balancer) in front
 * trust.clientIp(req); // the address the load balancer saw
 * ```
 */
export function createProxyTrust(setting: TrustProxy = false): ProxyTrust {
  // one trust per setting, shared by every middleware given it: what one of them read of a
  // request (its chain, its scheme) the others reuse
  const key = settingKey(setting);
  const made = key === undefined ? undefined : TRUSTS.get(key);
  if (made !== undefined) return made;
  const trust = makeProxyTrust(setting);
  if (key !== undefined && TRUSTS.size < MAX_SHARED_TRUSTS) TRUSTS.set(key, trust);
  return trust;
}

/** The trusts made, by setting: a handful per process (one per distinct setting). */
const TRUSTS = new Map<string, ProxyTrust>();
const MAX_SHARED_TRUSTS = 64;

function settingKey(setting: unknown): string | undefined {
  if (typeof setting === 'number') return `hops:${setting}`;
  if (typeof setting === 'string') return `ranges:${setting}`;
  if (Array.isArray(setting) && setting.every((entry) => typeof entry === 'string')) {
    return `ranges:${setting.join(',')}`;
  }
  return undefined; // refused below, or false
}

function makeProxyTrust(setting: TrustProxy): ProxyTrust {
  const peer = (req: IncomingMessage) => normalizeIp(req.socket.remoteAddress ?? '');
  const ownTls = (req: IncomingMessage) => (req.socket as TLSSocket).encrypted === true;
  if (setting === false || setting === 0) {
    return { clientIp: peer, isSecure: ownTls, trustsProxies: false };
  }
  /** How many of the chain's hops (from the right, the peer first) are trusted proxies. */
  let trustedHops: (chain: readonly string[]) => number;
  /** Whether the peer is a trusted proxy (a request without X-Forwarded-For). */
  let peerTrusted: (peer: string) => boolean;
  if (typeof setting === 'number') {
    if (!Number.isInteger(setting) || setting < 0) {
      throw invalidOption('trustProxy: a hop count must be a non-negative integer');
    }
    trustedHops = (chain) => Math.min(setting, chain.length - 1);
    peerTrusted = () => true;
  } else if (typeof setting === 'string' || Array.isArray(setting)) {
    const ranges = typeof setting === 'string' ? setting.split(',') : setting;
    const list = rangesOf(ranges);
    trustedHops = (chain) => {
      let hops = 0;
      for (let i = chain.length - 1; i > 0; i--) {
        if (!list.has(chain[i]!)) break;
        hops++;
      }
      return hops;
    };
    peerTrusted = (peer) => list.has(peer);
  } else {
    throw invalidOption('trustProxy: expected false, a hop count or CIDR ranges');
  }
  const chainOf = (req: IncomingMessage): readonly string[] => {
    // read once per request, whatever number of middleware ask (rate limits, guard, https)
    const known = (req as WithChain)[CHAIN];
    if (known !== undefined) return known;
    const chain = forwardedList(req.headers['x-forwarded-for']).map(normalizeIp);
    chain.push(peer(req));
    (req as WithChain)[CHAIN] = chain;
    return chain;
  };
  const secure = Symbol('portico.secure');
  type WithSecure = IncomingMessage & { [secure]?: boolean };
  return {
    trustsProxies: true,
    clientIp(req) {
      const chain = chainOf(req);
      for (let i = chain.length - 1 - trustedHops(chain); i < chain.length; i++) {
        if (ipFamily(chain[i]!) !== 0) return chain[i]!;
      }
      return chain[chain.length - 1]!;
    },
    isSecure(req) {
      if (ownTls(req)) return true;
      // read once per request and trust (HSTS and the HTTPS redirect both ask)
      const known = (req as WithSecure)[secure];
      if (known !== undefined) return known;
      const chain = chainOf(req);
      // without X-Forwarded-For, the peer alone may still be a trusted proxy setting the proto
      const hops = chain.length === 1 ? (peerTrusted(chain[0]!) ? 1 : 0) : trustedHops(chain);
      const answer = hops > 0 && forwardedProto(req.headers['x-forwarded-proto'], hops) === 'https';
      (req as WithSecure)[secure] = answer;
      return answer;
    },
  };
}
