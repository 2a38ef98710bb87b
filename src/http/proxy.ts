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
 * Builds the trust decision once, from the setting.
 *
 * @example
 * ```ts
 * const trust = createProxyTrust(1); // one proxy (a load balancer) in front
 * trust.clientIp(req); // the address the load balancer saw
 * ```
 */
export function createProxyTrust(setting: TrustProxy = false): ProxyTrust {
  const peer = (req: IncomingMessage) => normalizeIp(req.socket.remoteAddress ?? '');
  const ownTls = (req: IncomingMessage) => (req.socket as TLSSocket).encrypted === true;
  if (setting === false || setting === 0) {
    return { clientIp: peer, isSecure: ownTls, trustsProxies: false };
  }
  let trustedHops: (chain: readonly string[]) => number;
  if (typeof setting === 'number') {
    if (!Number.isInteger(setting) || setting < 0) {
      throw invalidOption('trustProxy: a hop count must be a non-negative integer');
    }
    trustedHops = (chain) => Math.min(setting, chain.length - 1);
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
      const known = chainOf(req);
      // Without X-Forwarded-For, the peer alone may still be a trusted proxy setting the proto.
      const chain = known.length === 1 ? ['', ...known] : known;
      const hops = trustedHops(chain);
      if (hops === 0) return false;
      const protos = forwardedList(req.headers['x-forwarded-proto']);
      if (protos.length === 0) return false;
      const proto = protos[Math.max(0, protos.length - hops)]!;
      return proto.toLowerCase() === 'https';
    },
  };
}
