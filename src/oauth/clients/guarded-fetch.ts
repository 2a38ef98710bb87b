// The keys of a client that described itself (dynamic registration, a metadata document) are
// at a URL its author chose: they are fetched through the webhooks' address guard.
import type { Dispatcher } from 'undici';
import { loadUndici } from '../../internal/lazy.js';
import { type AddressGuardOptions, guardedAgentWith } from '../../webhook/address-guard/guard.js';

/** How a client's `jwks_uri` is fetched: `fetch`'s shape, as jose calls it. */
export type KeysFetch = (href: string, init: RequestInit) => Promise<Response>;

/** Options of {@link guardedKeysFetch}. */
export interface GuardedKeysFetchOptions {
  /** Allow loopback and private addresses (tests, a private deployment). @defaultValue `false` */
  allowPrivate?: boolean;
  /** The DNS lookup the guard checks (tests). @defaultValue `dns.lookup` */
  lookup?: AddressGuardOptions['lookup'];
  /** The TLS trust (tests' own CA). @defaultValue the system's roots and `NODE_EXTRA_CA_CERTS` */
  ca?: string | Buffer | readonly (string | Buffer)[];
}

/**
 * A fetch of key sets through the address guard: every DNS answer checked and the connection
 * made to the checked address (no loopback, private, link-local or metadata address unless
 * `allowPrivate`), `https` only, redirects not followed, 5 seconds to connect.
 *
 * @example
 * ```ts
 * const fetchKeys = guardedKeysFetch();
 * const res = await fetchKeys('https://agent.example/jwks.json', { headers: { accept: 'application/json' } });
 * ```
 */
export function guardedKeysFetch(options: GuardedKeysFetchOptions = {}): KeysFetch {
  const agent = lazyGuardedAgent(options, { connectTimeoutMs: 5_000, connections: 2 });
  return async (href, init) => {
    const undici = await loadUndici();
    const response = await undici.fetch(href, {
      ...(init as Parameters<typeof undici.fetch>[1]),
      dispatcher: await agent.get(),
      redirect: 'manual',
    });
    return response as unknown as Response;
  };
}

/** An agent made on its first use, and closed (to be made again if used again). */
export interface LazyAgent {
  get(): Promise<Dispatcher>;
  close(): Promise<void>;
}

/**
 * The address-guarded agent for what a client described (its keys, its metadata document),
 * made on its first use: undici loads then, not when portico is imported.
 *
 * @internal
 */
export function lazyGuardedAgent(
  options: GuardedKeysFetchOptions,
  limits: { readonly connectTimeoutMs: number; readonly connections: number },
): LazyAgent {
  let agent: Promise<Dispatcher> | undefined;
  return {
    get() {
      agent ??= loadUndici().then((undici) =>
        guardedAgentWith(
          undici,
          {
            allowPrivate: options.allowPrivate ?? false,
            ...(options.lookup !== undefined && { lookup: options.lookup }),
            connectTimeout: `${limits.connectTimeoutMs}ms`,
            connections: limits.connections,
            keepAliveTimeout: '1s',
          },
          options.ca === undefined ? {} : { ca: options.ca },
        ),
      );
      return agent;
    },
    async close() {
      const current = agent;
      agent = undefined;
      if (current !== undefined) await (await current).close();
    },
  };
}
