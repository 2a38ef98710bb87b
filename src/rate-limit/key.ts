import type { IncomingMessage } from 'node:http';
import { getPrincipal } from '../core/principal.js';
import { createProxyTrust, type ProxyTrust, type TrustProxy } from '../http/proxy.js';
import { ipFamily, ipv6Groups, stripBrackets, stripZone } from '../internal/ip.js';

/**
 * What a rate limit counts by: a key per client, or `undefined` to fall back to the
 * client's IP address.
 */
export type RateLimitKey = (
  req: IncomingMessage,
) => string | undefined | Promise<string | undefined>;

/**
 * The rate-limit key of a client address: an IPv4 address as it is, an IPv6 address as
 * its /64 network in canonical form (RFC 5952), since one subscriber usually holds a whole
 * /64 and could otherwise rotate through its addresses. Brackets and zone ids are dropped,
 * and IPv4-mapped addresses (`::ffff:192.0.2.1`) count as their IPv4 address. Anything that
 * is not an IP address is returned as it is.
 *
 * @example
 * ```ts
 * import { ipKey } from 'portico/rate-limit';
 *
 * ipKey('203.0.113.7');              // '203.0.113.7'
 * ipKey('2001:DB8:1:2:aa:bb:cc:dd'); // '2001:db8:1:2::/64'
 * ipKey('::ffff:203.0.113.7');       // '203.0.113.7'
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc5952 | RFC 5952}
 */
export function ipKey(ip: string): string {
  const address = stripZone(stripBrackets(ip));
  const family = ipFamily(address);
  if (family === 4) return address;
  if (family !== 6) return ip;
  const g = ipv6Groups(address);
  if (g[0] === 0 && g[1] === 0 && g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0xffff) {
    const high = g[6]!;
    const low = g[7]!;
    return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
  }
  // The low 64 bits are zero, so the longest run of zero groups is the one that ends the
  // address: only trailing zeros of the prefix join it (RFC 5952 §4.2).
  let end = 4;
  while (end > 0 && g[end - 1] === 0) end--;
  let prefix = '';
  for (let i = 0; i < end; i++) prefix += (i === 0 ? '' : ':') + g[i]!.toString(16);
  return `${prefix}::/64`;
}

/**
 * Builds the key a rate limit counts by when none is given: the client's IP address
 * (through the trusted proxies, see {@link TrustProxy}), as `ipKey` shapes it, after
 * an `ip:` prefix that keeps it apart from the API key and user keys to come.
 *
 * @example
 * ```ts
 * const byIp = defaultRateLimitKey(1); // one load balancer in front
 * rateLimit({ key: (req) => req.headers['x-tenant'] as string | undefined ?? byIp(req) });
 * ```
 */
export function defaultRateLimitKey(
  trustProxy: TrustProxy | ProxyTrust = false,
): (req: IncomingMessage) => string {
  const trust =
    typeof trustProxy === 'object' && 'clientIp' in trustProxy
      ? trustProxy
      : createProxyTrust(trustProxy as TrustProxy);
  if (!trust.trustsProxies) {
    // The peer is the client: one key per connection, however many requests it carries.
    const bySocket = new WeakMap<object, string>();
    return function socketIpKey(req: IncomingMessage): string {
      let key = bySocket.get(req.socket);
      if (key === undefined) {
        key = `ip:${ipKey(trust.clientIp(req))}`;
        bySocket.set(req.socket, key);
      }
      return key;
    };
  }
  return function clientIpKey(req: IncomingMessage): string {
    return `ip:${ipKey(trust.clientIp(req))}`;
  };
}

/**
 * The rate-limit key of an authenticated request, as the specification asks ("per key or
 * per user"): `key:<id>` for an API key (each key its own budget), else `user:<sub>`;
 * `undefined` when no authenticator has run or none found a principal, so the request
 * counts by client IP. `rateLimit()` uses it by default; run it after `authenticate()`.
 *
 * @example
 * ```ts
 * rateLimit({ key: (req) => principalRateLimitKey(req) ?? `tenant:${tenantOf(req)}` });
 * ```
 */
export function principalRateLimitKey(req: IncomingMessage): string | undefined {
  const principal = getPrincipal(req);
  if (principal === undefined) return undefined;
  return principal.keyId !== undefined ? `key:${principal.keyId}` : `user:${principal.sub}`;
}
