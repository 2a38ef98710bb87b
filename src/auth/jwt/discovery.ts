import type { JWTVerifyGetKey } from 'jose';
import { keysUnavailable } from './error.js';
import { resolveKeySource } from './jwks.js';
import type { KeySource, RemoteJwksOptions } from './jwks-remote.js';

/** Where an issuer's metadata is looked for: OpenID Connect Discovery §4, then RFC 8414 §3. */
export function discoveryUrls(issuer: string): string[] {
  const url = new URL(issuer);
  const path = url.pathname.replace(/\/+$/, '');
  return [
    `${url.origin}${path}/.well-known/openid-configuration`,
    `${url.origin}/.well-known/oauth-authorization-server${path}`,
  ];
}

async function findJwksUri(issuer: string, timeoutMs: number): Promise<string> {
  for (const url of discoveryUrls(issuer)) {
    const response = await fetch(url, {
      headers: { accept: 'application/json' },
      redirect: 'manual',
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (response.status !== 200) continue;
    const document = (await response.json()) as { issuer?: unknown; jwks_uri?: unknown } | null;
    // the document must be the issuer's own (OpenID Connect Discovery §4.3, RFC 8414 §3.3)
    if (document?.issuer !== issuer) throw new Error('The metadata names another issuer');
    if (typeof document.jwks_uri !== 'string') throw new Error('The metadata has no jwks_uri');
    return document.jwks_uri;
  }
  throw new Error('No metadata document could be fetched');
}

/**
 * A key source found from the issuer alone: its metadata document (OpenID Connect Discovery
 * or RFC 8414) is fetched on first use, its `jwks_uri` then serves the keys. A failed
 * discovery answers "keys unavailable" and is retried after the cooldown.
 */
export function discoveredKeySource(
  owner: string,
  issuer: string,
  algorithms: readonly string[],
  jwksOptions: RemoteJwksOptions | undefined,
): KeySource {
  let found: KeySource | undefined;
  let pending: Promise<KeySource> | undefined;
  let failedAt = Number.NEGATIVE_INFINITY;
  const cooldown = jwksOptions?.cooldownDuration ?? 30_000;
  const load = (): Promise<KeySource> => {
    if (found !== undefined) return Promise.resolve(found);
    if (Date.now() < failedAt + cooldown) return Promise.reject(keysUnavailable());
    pending ??= findJwksUri(issuer, jwksOptions?.timeoutDuration ?? 5_000).then(
      (jwksUrl) => {
        found = resolveKeySource(owner, { jwksUrl, jwksOptions }, algorithms).source;
        return found;
      },
      (error: unknown) => {
        failedAt = Date.now();
        pending = undefined;
        throw keysUnavailable(error);
      },
    );
    return pending;
  };
  const key: JWTVerifyGetKey = async (header, token) => {
    const source = await load();
    return typeof source.key === 'function' ? source.key(header, token) : source.key;
  };
  return {
    key,
    generation: () => found?.generation() ?? 0,
    isFresh: () => found?.isFresh() ?? false,
  };
}
