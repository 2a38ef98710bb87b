// Outgoing machine tokens: a client-credentials token source that caches the token until
// shortly before it expires, asks once for any number of concurrent callers, backs off while
// the provider fails, and adds the token (and a DPoP proof, RFC 9449) to outgoing requests,
// through an undici interceptor or as headers.
import type { Dispatcher } from 'undici';
import type { Duration } from '../core/duration.js';
import { PorticoError } from '../core/errors/http-error.js';
import {
  assertKnownOptions,
  durationOption,
  functionOption,
  invalidOption,
} from '../internal/options.js';
import { createProofSigner, type ProofSigner } from './dpop-proof.js';
import { loadOpenidClient } from './openid-client.js';
import { internalsOf, type UpstreamProvider } from './provider.js';
import { expiryOf } from './tokens.js';

/** Options of {@link clientCredentials}. */
export interface ClientCredentialsOptions {
  /** The provider that issues the tokens, with this client's credentials. */
  provider: UpstreamProvider;
  /** The scopes to ask for (space-separated). @defaultValue none (the provider's default) */
  scope?: string;
  /** The resource (RFC 8707) the token is for: one URI, or several. @defaultValue none */
  resource?: string | readonly string[];
  /**
   * Sender-constrained tokens (RFC 9449): a key pair made once per source (ES256), a DPoP
   * proof with each token request and each outgoing request.
   * @defaultValue `false`
   */
  dpop?: boolean;
  /** How long before its expiry a token is replaced, in milliseconds. @defaultValue `30_000` */
  refreshBefore?: Duration;
  /** The first wait after a failure (milliseconds), doubled per failure up to `maxBackoff`. @defaultValue `1_000` */
  minBackoff?: Duration;
  /** The longest wait after failures, in milliseconds. @defaultValue `60_000` */
  maxBackoff?: Duration;
  /** The clock, for tests. @defaultValue `Date.now` */
  now?: () => number;
}

/** Tokens for outgoing calls, as {@link clientCredentials} makes them. */
export interface TokenSource {
  /**
   * A valid access token: the cached one, else a new one (one token request however many
   * callers wait for it). Rejects with `ERR_TOKEN_UNAVAILABLE` while the provider fails and no
   * unexpired token is cached.
   */
  token(): Promise<string>;
  /** `Authorization` (and `DPoP`) for a request of `method` to `url`. */
  headers(url: string | URL, method?: string): Promise<Record<string, string>>;
  /** An undici interceptor that adds {@link TokenSource.headers} to each request it dispatches. */
  interceptor(): Dispatcher.DispatcherComposeInterceptor;
  /** Forgets the cached token (after a 401 from the API, say): the next call asks again. */
  reset(): void;
}

const OWNER = 'clientCredentials()';
const OPTIONS = [
  'provider',
  'scope',
  'resource',
  'dpop',
  'refreshBefore',
  'minBackoff',
  'maxBackoff',
  'now',
];

interface Held {
  accessToken: string;
  tokenType: string;
  /** Epoch ms: past it, the token is not used. */
  expiresAt: number;
}

function resourceOption(value: unknown): string[] {
  if (value === undefined) return [];
  const list = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(list) || list.some((r) => typeof r !== 'string' || !URL.canParse(r))) {
    throw invalidOption(`${OWNER}: \`resource\` must be an absolute URI, or an array of them`);
  }
  return [...list];
}

/** The headers of `opts` with `added` set (replacing any of the same name). */
function withHeaders(
  headers: Dispatcher.DispatchOptions['headers'],
  added: Record<string, string>,
): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  const names = new Set(Object.keys(added).map((n) => n.toLowerCase()));
  const put = (name: string, value: unknown) => {
    if (!names.has(name.toLowerCase()) && value !== undefined) {
      out[name] = Array.isArray(value) ? value.map(String) : String(value);
    }
  };
  if (Array.isArray(headers)) {
    for (let i = 0; i + 1 < headers.length; i += 2) put(String(headers[i]), headers[i + 1]);
  } else if (headers !== null && headers !== undefined) {
    const entries =
      typeof (headers as Iterable<unknown>)[Symbol.iterator] === 'function'
        ? [...(headers as Iterable<[string, string]>)]
        : Object.entries(headers as Record<string, unknown>);
    for (const [name, value] of entries) put(name, value);
  }
  return { ...out, ...added };
}

/**
 * A client-credentials token source at `provider` (its client secret, `private_key_jwt` or
 * mTLS, as the provider was made): the token is cached until `refreshBefore` its expiry, one
 * request serves every concurrent caller, and failures back off (1 s doubling to 60 s) while
 * an unexpired token keeps being served. `interceptor()` adds the token to outgoing undici
 * requests.
 *
 * @example
 * ```ts
 * import { Agent, fetch } from 'undici';
 * import { clientCredentials, upstreamProvider } from 'portico/client';
 *
 * const tokens = clientCredentials({
 *   provider: upstreamProvider({
 *     name: 'auth',
 *     issuer: 'https://auth.example.com',
 *     clientId: 'billing',
 *     clientSecret: process.env.BILLING_SECRET,
 *   }),
 *   scope: 'invoices:read',
 *   resource: 'https://api.example.com',
 * });
 * const api = new Agent().compose(tokens.interceptor());
 * const reply = await fetch('https://api.example.com/invoices', { dispatcher: api });
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc6749#section-4.4 | RFC 6749 §4.4}
 */
export function clientCredentials(options: ClientCredentialsOptions): TokenSource {
  assertKnownOptions(OWNER, options, OPTIONS);
  const at = internalsOf(options.provider);
  if (at === undefined)
    throw invalidOption(`${OWNER}: \`provider\` must come from upstreamProvider()`);
  if (options.scope !== undefined && (typeof options.scope !== 'string' || options.scope === '')) {
    throw invalidOption(`${OWNER}: \`scope\` must be a non-empty string`);
  }
  const resources = resourceOption(options.resource);
  const dpop = options.dpop ?? false;
  if (typeof dpop !== 'boolean') throw invalidOption(`${OWNER}: \`dpop\` must be a boolean`);
  const refreshBefore = durationOption(OWNER, 'refreshBefore', options.refreshBefore, 30_000);
  const minBackoff = durationOption(OWNER, 'minBackoff', options.minBackoff, 1_000, { min: 1 });
  const maxBackoff = durationOption(OWNER, 'maxBackoff', options.maxBackoff, 60_000, {
    min: minBackoff,
  });
  const now = functionOption(OWNER, 'now', options.now) ?? Date.now;
  const label = options.provider.label;

  let held: Held | undefined;
  let asking: Promise<Held> | undefined;
  let failures = 0;
  let retryAt = 0;
  let lastError: unknown;
  let signer: Promise<ProofSigner> | undefined;
  const proofs = () => {
    signer ??= createProofSigner();
    return signer;
  };

  async function ask(): Promise<Held> {
    const client = await loadOpenidClient();
    const config = await at!.configuration();
    const parameters = new URLSearchParams();
    if (options.scope !== undefined) parameters.set('scope', options.scope);
    for (const resource of resources) parameters.append('resource', resource);
    const handle = dpop ? client.getDPoPHandle(config, (await proofs()).keyPair) : undefined;
    const response = await client.clientCredentialsGrant(
      config,
      parameters,
      handle === undefined ? undefined : { DPoP: handle },
    );
    const answeredAt = now();
    return {
      accessToken: response.access_token,
      tokenType: response.token_type,
      // without expires_in, a token is used for 5 minutes at most
      expiresAt: expiryOf(response, answeredAt) ?? answeredAt + 300_000,
    };
  }

  function refresh(): Promise<Held> {
    asking ??= ask()
      .then((fresh) => {
        held = fresh;
        failures = 0;
        retryAt = 0;
        return fresh;
      })
      .catch((error: unknown) => {
        lastError = error;
        failures += 1;
        retryAt = now() + Math.min(maxBackoff, minBackoff * 2 ** (failures - 1));
        throw error;
      })
      .finally(() => {
        asking = undefined;
      });
    return asking;
  }

  const unavailable = (cause: unknown) =>
    new PorticoError(
      `${OWNER}: no token from ${label} (it failed; trying again after a pause)`,
      'ERR_TOKEN_UNAVAILABLE',
      { cause },
    );

  async function current(): Promise<Held> {
    const t = now();
    if (held !== undefined && t < held.expiresAt - refreshBefore) return held;
    const usable = held !== undefined && t < held.expiresAt ? held : undefined;
    if (t < retryAt) {
      if (usable !== undefined) return usable;
      throw unavailable(lastError);
    }
    try {
      return await refresh();
    } catch (error) {
      // a token that has not expired yet is still good while the provider fails
      if (usable !== undefined) return usable;
      throw unavailable(error);
    }
  }

  async function headers(url: string | URL, method = 'GET'): Promise<Record<string, string>> {
    const token = await current();
    if (!dpop || token.tokenType.toLowerCase() !== 'dpop') {
      return { authorization: `Bearer ${token.accessToken}` };
    }
    const proof = await (await proofs()).proof(method, url, token.accessToken);
    return { authorization: `DPoP ${token.accessToken}`, dpop: proof };
  }

  return Object.freeze({
    token: async () => (await current()).accessToken,
    headers,
    reset() {
      held = undefined;
    },
    interceptor(): Dispatcher.DispatcherComposeInterceptor {
      return (dispatch) => (opts, handler) => {
        const url = new URL(opts.path, opts.origin);
        headers(url, opts.method).then(
          (added) => dispatch({ ...opts, headers: withHeaders(opts.headers, added) }, handler),
          (error: unknown) => {
            const h = handler as { onResponseError?: (c: unknown, e: unknown) => void };
            h.onResponseError?.(null, error);
          },
        );
        return true;
      };
    },
  } satisfies TokenSource);
}
