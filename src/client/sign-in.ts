// Relying-party sign-in for web applications: `/login/{provider}` sends the browser to the
// provider (authorization code, PKCE S256, state, nonce), `/login/{provider}/callback` takes the
// code back, verifies it through openid-client, asks the application who the user is
// (`toUser`) and signs them in with portico's sessions.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Configuration } from 'openid-client';
import type { ReplayStore } from '../auth/replay/store.js';
import { MemoryReplayStore } from '../auth/replay/store.js';
import type { Sessions, SessionUser } from '../auth/session/session.js';
import type { Duration } from '../core/duration.js';
import { badRequest, forbidden, unauthorized } from '../core/errors/errors.js';
import { send, sendRedirect } from '../core/send.js';
import type { MethodTable } from '../http/routing/methods.js';
import { OAUTH_ERROR_CODE } from '../internal/grammar.js';
import {
  assertKnownOptions,
  durationOption,
  functionOption,
  invalidOption,
} from '../internal/options.js';
import { MemoryRecordStore, type RecordStore } from '../oauth/store/store.js';
import { providerFailure } from './failures.js';
import { loadOpenidClient } from './openid-client.js';
import {
  internalsOf,
  type ProviderInternals,
  type UpstreamClaims,
  type UpstreamProvider,
} from './provider.js';
import { sameOriginPath } from './return-to.js';
import { createSealer, type Sealer, type SealKeys } from './seal.js';
import { tokensOf, type UpstreamTokens } from './tokens.js';
import { TransactionCookie } from './transaction-cookie.js';
import { createUserTokenKeeper, type UserTokenKeeper } from './user-tokens.js';

/** Who signed in at a provider: what `toUser` decides on. */
export interface UpstreamIdentity {
  readonly provider: UpstreamProvider;
  /** The verified ID token's claims (OIDC), or what the provider's `profile` gave (OAuth 2.0). */
  readonly claims: UpstreamClaims;
  readonly tokens: UpstreamTokens;
  readonly req: IncomingMessage;
}

/** Options of {@link createSignIn}. */
export interface SignInOptions {
  /** The providers users may sign in at; each gets `/login/{name}` and its callback. */
  providers: readonly UpstreamProvider[];
  /** portico's sessions, which the callback signs the user in with. */
  sessions: Sessions;
  /**
   * This application's public origin (and base path), from configuration, never from the
   * request: redirect URIs are `{baseUrl}{prefix}/{name}/callback`.
   */
  baseUrl: string;
  /**
   * Keys that seal the sign-in transaction in its cookie and the tokens kept with the session
   * (32 bytes or more each; the first seals, all open: rotate by putting a new key first).
   */
  secret: SealKeys;
  /**
   * Who the user is here: the session's user (a stable local `sub`: link accounts here), or
   * `undefined` to refuse the sign-in (a 403, no session).
   */
  toUser(identity: UpstreamIdentity): SessionUser | undefined | Promise<SessionUser | undefined>;
  /** Where the routes are. @defaultValue `'/login'` */
  prefix?: string;
  /** Where a sign-in without `returnTo` lands. @defaultValue `'/'` */
  defaultReturnTo?: string;
  /** How long a sign-in may take at the provider, in milliseconds. @defaultValue `600_000` (10 minutes) */
  transactionLifetime?: Duration;
  /**
   * The transaction cookie: `HttpOnly`, `SameSite=Lax` (it must come back from the
   * provider's redirect), `Secure` unless `secure: false` (development over HTTP).
   * @defaultValue `{ name: '__Host-portico-sign-in', secure: true }`
   */
  cookie?: { name?: string; secure?: boolean };
  /**
   * Where used transactions are remembered until they expire, so that a callback is
   * accepted once (share one across processes, e.g. `RedisReplayStore`).
   * @defaultValue a `MemoryReplayStore`
   */
  replay?: ReplayStore;
  /**
   * Keeps the provider's tokens server-side with the session, for calls on the user's behalf
   * ({@link SignIn.accessToken}): sealed with `secret` in `store` (share one across processes,
   * e.g. `RedisRecordStore`), refreshed `refreshBefore` their expiry, one refresh at a time per
   * session, revoked at sign-out. Never in a cookie. `refreshBefore` (milliseconds, `60_000`);
   * `lifetime` (milliseconds, `43_200_000`: 12 hours, a session's longest): how long they are kept.
   * @defaultValue not kept
   */
  tokens?: { store?: RecordStore; refreshBefore?: Duration; lifetime?: Duration };
}

/** What {@link createSignIn} returns. */
export interface SignIn {
  /** `{prefix}/{name}` and `{prefix}/{name}/callback` per provider, for `createRouter()`. */
  readonly routes: Readonly<Record<string, MethodTable>>;
  /** The providers' sign-in links for a page, each returning to `returnTo` (a local path). */
  links(returnTo?: string): { name: string; label: string; href: string }[];
  /**
   * Ends the portico session; answers the provider's end-session URL (RP-Initiated Logout,
   * with `id_token_hint`) when the session came from a provider that has one, for the app to
   * redirect to, else `undefined`.
   */
  signOut(
    req: IncomingMessage,
    res: ServerResponse,
    options?: { postLogoutRedirectUri?: string },
  ): Promise<string | undefined>;
  /**
   * The provider's access token of the request's session (with the `tokens` option), refreshed
   * when it is about to expire; a 401 problem when the session has none or it cannot be
   * refreshed (sign in again), a 502 when the provider cannot be reached.
   */
  accessToken(req: IncomingMessage): Promise<string>;
}

const OWNER = 'createSignIn()';
const OPTIONS = [
  'providers',
  'sessions',
  'baseUrl',
  'secret',
  'toUser',
  'prefix',
  'defaultReturnTo',
  'transactionLifetime',
  'cookie',
  'replay',
  'tokens',
];
/** Where a session's provider and sealed ID token are kept in the session's data. */
export const UPSTREAM_DATA = 'portico:upstream';
/** How long a sealed ID token (for `id_token_hint`) stays openable. */
const ID_TOKEN_SEAL_MS = 400 * 24 * 3600 * 1000;
const NO_STORE = { 'Cache-Control': 'no-store' };

function baseUrlOption(value: unknown): URL {
  let url: URL | undefined;
  try {
    url = typeof value === 'string' ? new URL(value) : undefined;
  } catch {
    url = undefined;
  }
  if (url === undefined || !['https:', 'http:'].includes(url.protocol) || url.search !== '') {
    throw invalidOption(`${OWNER}: \`baseUrl\` must be an absolute http(s) URL without a query`);
  }
  return url;
}

interface Known {
  provider: UpstreamProvider;
  at: ProviderInternals;
}

function providersOption(value: unknown): Map<string, Known> {
  if (!Array.isArray(value) || value.length === 0) {
    throw invalidOption(`${OWNER}: \`providers\` must be a non-empty array of upstreamProvider()`);
  }
  const byName = new Map<string, Known>();
  for (const provider of value as UpstreamProvider[]) {
    const at = internalsOf(provider);
    if (at === undefined) {
      throw invalidOption(`${OWNER}: each of \`providers\` must come from upstreamProvider()`);
    }
    if (byName.has(provider.name)) {
      throw invalidOption(`${OWNER}: two providers are named ${provider.name}`);
    }
    byName.set(provider.name, { provider, at });
  }
  return byName;
}

/** The `tokens` option: a keeper of the provider's tokens, or `undefined` when they are not kept. */
function keeperOf(option: SignInOptions['tokens'], sealer: Sealer): UserTokenKeeper | undefined {
  if (option === undefined) return undefined;
  if (typeof option !== 'object' || option === null) {
    throw invalidOption(`${OWNER}: \`tokens\` must be an object ({} keeps them in memory)`);
  }
  assertKnownOptions(`${OWNER}: tokens`, option, ['store', 'refreshBefore', 'lifetime']);
  const store = option.store ?? new MemoryRecordStore();
  if (typeof store?.find !== 'function' || typeof store.replace !== 'function') {
    throw invalidOption(`${OWNER}: \`tokens.store\` must be a RecordStore`);
  }
  const refreshBefore = durationOption(OWNER, 'tokens.refreshBefore', option.refreshBefore, 60_000);
  return createUserTokenKeeper({ store, sealer, refreshBefore });
}

/** What is kept of the callback's tokens (the ID token is kept apart, for sign-out). */
const keptOf = (tokens: UpstreamTokens) => ({
  accessToken: tokens.accessToken,
  tokenType: tokens.tokenType,
  ...(tokens.refreshToken !== undefined && { refreshToken: tokens.refreshToken }),
  ...(tokens.expiresAt !== undefined && { expiresAt: tokens.expiresAt }),
  ...(tokens.scope !== undefined && { scope: tokens.scope }),
});

/**
 * A page that continues to `path` from this origin: after a cross-site redirect from the
 * provider, a `SameSite=Strict` session cookie is not sent on a redirect, but it is on a
 * navigation this page starts.
 */
function continuePage(res: ServerResponse, path: string): void {
  const href = path.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  send(
    res,
    200,
    `<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=${href}"><title>Signed in</title><p><a href="${href}">Continue</a></p>`,
    {
      'Content-Type': 'text/html; charset=utf-8',
      'Content-Security-Policy': "default-src 'none'; frame-ancestors 'none'; base-uri 'none'",
      'Referrer-Policy': 'no-referrer',
      ...NO_STORE,
    },
  );
}

/**
 * Sign-in at one or more upstream providers (OpenID Connect or plain OAuth 2.0) into portico's
 * sessions. `GET {prefix}/{name}?returnTo=/path` redirects to the provider with PKCE S256,
 * `state` and `nonce`, the transaction sealed in a short-lived `HttpOnly`, `SameSite=Lax`
 * cookie bound to this browser; `GET {prefix}/{name}/callback` exchanges the code, verifies the
 * ID token (issuer, audience, nonce, signature), asks `toUser`, signs the user in and returns
 * to `returnTo` (same origin only). A provider's `error`, a missing, replayed or foreign
 * `state`, an answer that does not verify: 400; the provider unreachable: 502; never a session.
 *
 * @example
 * ```ts
 * import { createRouter, createSessions } from 'portico';
 * import { createSignIn, upstreamProvider } from 'portico/client';
 *
 * const sessions = createSessions({ allowedOrigins: ['https://app.example.com'] });
 * const signIn = createSignIn({
 *   baseUrl: 'https://app.example.com',
 *   secret: process.env.SIGN_IN_SECRET ?? '',
 *   sessions,
 *   providers: [
 *     upstreamProvider({
 *       name: 'google',
 *       issuer: 'https://accounts.google.com',
 *       clientId: process.env.GOOGLE_CLIENT_ID ?? '',
 *       clientSecret: process.env.GOOGLE_CLIENT_SECRET,
 *     }),
 *   ],
 *   // a stable local subject per upstream account
 *   toUser: ({ provider, claims }) => ({
 *     sub: `${provider.name}:${claims.sub}`,
 *     name: typeof claims.name === 'string' ? claims.name : undefined,
 *     scopes: ['read:messages'],
 *   }),
 * });
 * const router = createRouter({ ...signIn.routes });
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9700 | RFC 9700 (OAuth 2.0 Security BCP)}
 */
export function createSignIn(options: SignInOptions): SignIn {
  assertKnownOptions(OWNER, options, OPTIONS);
  const providers = providersOption(options.providers);
  const base = baseUrlOption(options.baseUrl);
  const maybeToUser = functionOption(OWNER, 'toUser', options.toUser);
  if (maybeToUser === undefined) throw invalidOption(`${OWNER}: \`toUser\` is required`);
  const toUser = maybeToUser;
  const sessions = options.sessions;
  if (typeof sessions?.signIn !== 'function') {
    throw invalidOption(`${OWNER}: \`sessions\` must come from createSessions()`);
  }
  const prefix = options.prefix ?? '/login';
  if (typeof prefix !== 'string' || !/^(\/[\w.~-]+)+$/.test(prefix)) {
    throw invalidOption(`${OWNER}: \`prefix\` must be a path such as '/login'`);
  }
  const fallback = sameOriginPath(options.defaultReturnTo ?? '/', base);
  if (fallback === undefined) {
    throw invalidOption(`${OWNER}: \`defaultReturnTo\` must be a path of this origin`);
  }
  const lifetime = durationOption(
    OWNER,
    'transactionLifetime',
    options.transactionLifetime,
    600_000,
    {
      min: 10_000,
    },
  );
  const transactions = createSealer(OWNER, 'secret', options.secret, 'sign-in transaction');
  const idTokens = createSealer(OWNER, 'secret', options.secret, 'sign-in id token');
  const cookie = new TransactionCookie(OWNER, options.cookie, lifetime);
  const replay = options.replay ?? new MemoryReplayStore();
  if (typeof replay?.remember !== 'function') {
    throw invalidOption(`${OWNER}: \`replay\` must have a remember(id, ttlMs) method`);
  }
  const keeper = keeperOf(
    options.tokens,
    createSealer(OWNER, 'secret', options.secret, 'sign-in tokens'),
  );
  const tokensLifetime = durationOption(
    OWNER,
    'tokens.lifetime',
    options.tokens?.lifetime,
    43_200_000,
  );
  const basePath = base.pathname.replace(/\/$/, '');
  const pathOf = (provider: UpstreamProvider) => `${prefix}/${provider.name}`;
  const redirectUri = (provider: UpstreamProvider) =>
    new URL(`${basePath}${pathOf(provider)}/callback`, base).href;

  async function login({ provider, at }: Known, req: IncomingMessage, res: ServerResponse) {
    const query = new URL(req.url ?? '/', base).searchParams;
    const asked = query.getAll('returnTo');
    if (asked.length > 1) throw badRequest('The parameter returnTo is repeated.');
    const returnTo = asked.length === 0 ? fallback : sameOriginPath(asked[0], base);
    if (returnTo === undefined) {
      throw badRequest('returnTo must be a path of this site.');
    }
    const client = await loadOpenidClient();
    const config = await at.configuration().catch((error: unknown) => {
      throw providerFailure(error, provider.label, 'reading its configuration');
    });
    const state = client.randomState();
    const nonce = provider.kind === 'oidc' ? client.randomNonce() : undefined;
    const verifier = client.randomPKCECodeVerifier();
    const sealed = await transactions.seal(
      { p: provider.name, s: state, v: verifier, r: returnTo, ...(nonce && { n: nonce }) },
      lifetime,
    );
    const url = client.buildAuthorizationUrl(config, {
      ...provider.authorizationParams,
      redirect_uri: redirectUri(provider),
      scope: provider.scope,
      state,
      ...(nonce !== undefined && { nonce }),
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    });
    cookie.set(res, sealed);
    res.setHeader('Cache-Control', 'no-store');
    sendRedirect(res, 303, url.href);
  }

  /** The transaction this browser started at `provider`, checked against the callback's `state`. */
  async function transactionOf(
    provider: UpstreamProvider,
    req: IncomingMessage,
    query: URLSearchParams,
  ) {
    const held = cookie.read(req);
    if (held === undefined) {
      throw badRequest(
        `No sign-in at ${provider.label} is in progress in this browser (it expired, or was finished). Start again.`,
      );
    }
    const value = await transactions.open(held);
    if (value === undefined || value.p !== provider.name) {
      throw badRequest(`The sign-in at ${provider.label} expired or is not this one. Start again.`);
    }
    const states = query.getAll('state');
    if (states.length !== 1 || states[0] !== value.s) {
      throw badRequest('The sign-in answer does not belong to this browser. Start again.');
    }
    if ((await replay.seen?.(`sign-in:${value.s}`)) === true) {
      throw badRequest('This sign-in answer was used already. Start again.');
    }
    return value as { s: string; v: string; r: string; n?: string };
  }

  async function callback(known: Known, req: IncomingMessage, res: ServerResponse) {
    const { provider, at } = known;
    // the transaction is over, whatever the outcome
    cookie.clear(res);
    res.setHeader('Cache-Control', 'no-store');
    const current = new URL(req.url ?? '/', base);
    const tx = await transactionOf(provider, req, current.searchParams);
    const error = current.searchParams.get('error');
    if (error !== null) {
      const code = OAUTH_ERROR_CODE.test(error) ? error : 'error';
      throw badRequest(
        code === 'access_denied'
          ? `The sign-in at ${provider.label} was cancelled or refused.`
          : `${provider.label} refused the sign-in (${code}).`,
      );
    }
    const client = await loadOpenidClient();
    const config = await at.configuration().catch((error: unknown) => {
      throw providerFailure(error, provider.label, 'reading its configuration');
    });
    const answer = new URL(redirectUri(provider));
    answer.search = current.search;
    const response = await client
      .authorizationCodeGrant(config, answer, {
        pkceCodeVerifier: tx.v,
        expectedState: tx.s,
        ...(tx.n !== undefined && { expectedNonce: tx.n }),
        idTokenExpected: provider.kind === 'oidc',
      })
      .catch((error: unknown) => {
        throw providerFailure(error, provider.label, 'exchanging the code');
      });
    const tokens = tokensOf(response);
    const claims = await claimsOf(known, config, response, tokens);
    // accepted once: a second callback with the same transaction is refused above
    if (!(await replay.remember(`sign-in:${tx.s}`, lifetime, provider.name))) {
      throw badRequest('This sign-in answer was used already. Start again.');
    }
    const user = await toUser({ provider, claims, tokens, req });
    if (user === undefined || user === null) {
      throw forbidden(`This ${provider.label} account may not sign in here.`);
    }
    const upstream = {
      provider: provider.name,
      ...(tokens.idToken !== undefined && {
        idToken: await idTokens.seal({ t: tokens.idToken }, ID_TOKEN_SEAL_MS),
      }),
      ...(keeper !== undefined && { tokens: await keeper.keep(keptOf(tokens), tokensLifetime) }),
    };
    await sessions.signIn(req, res, { ...user, data: { ...user.data, [UPSTREAM_DATA]: upstream } });
    const site = req.headers['sec-fetch-site'];
    if (site === 'cross-site' || site === 'same-site') continuePage(res, tx.r);
    else sendRedirect(res, 303, tx.r);
  }

  async function claimsOf(
    { provider, at }: Known,
    config: Configuration,
    response: { claims(): Record<string, unknown> | undefined },
    tokens: UpstreamTokens,
  ): Promise<UpstreamClaims> {
    const claims =
      provider.kind === 'oidc'
        ? await withUserInfo(config, response.claims(), tokens.accessToken)
        : await at.profile?.(tokens.accessToken, at.fetch).catch((error: unknown) => {
            throw providerFailure(error, provider.label, 'reading the profile');
          });
    if (
      claims === undefined ||
      claims === null ||
      typeof claims.sub !== 'string' ||
      claims.sub === ''
    ) {
      throw badRequest(`${provider.label} did not say who signed in. Start again.`);
    }
    return Object.freeze({ ...claims }) as UpstreamClaims;
  }

  /**
   * The ID token's claims, completed by the UserInfo endpoint's when the provider has one
   * (many put `name` and `email` only there): the ID token's win; a UserInfo answer that fails,
   * or names another subject, adds nothing.
   */
  async function withUserInfo(
    config: Configuration,
    idClaims: Record<string, unknown> | undefined,
    accessToken: string,
  ): Promise<Record<string, unknown> | undefined> {
    if (idClaims === undefined || typeof idClaims.sub !== 'string') return idClaims;
    if (config.serverMetadata().userinfo_endpoint === undefined) return idClaims;
    const client = await loadOpenidClient();
    const info = await client.fetchUserInfo(config, accessToken, idClaims.sub).catch(() => ({}));
    return { ...info, ...idClaims };
  }

  const routes: Record<string, MethodTable> = {};
  for (const known of providers.values()) {
    routes[pathOf(known.provider)] = { GET: (req, res) => login(known, req, res) };
    routes[`${pathOf(known.provider)}/callback`] = { GET: (req, res) => callback(known, req, res) };
  }

  /** The session's upstream data and its provider, when it came from one of ours. */
  function upstreamOf(session: { data?: Record<string, unknown> } | undefined) {
    const upstream = session?.data?.[UPSTREAM_DATA] as
      | { provider?: unknown; idToken?: unknown; tokens?: unknown }
      | undefined;
    const known =
      typeof upstream?.provider === 'string' ? providers.get(upstream.provider) : undefined;
    return { upstream, known };
  }

  return Object.freeze({
    routes: Object.freeze(routes),
    async accessToken(req) {
      const { upstream, known } = upstreamOf(await sessions.read(req));
      if (keeper === undefined || known === undefined || typeof upstream?.tokens !== 'string') {
        throw unauthorized('Sign in at a provider first.', { code: 'ERR_AUTH_REQUIRED' });
      }
      return keeper.accessToken(upstream.tokens, known.provider, known.at);
    },
    links(returnTo?: string) {
      const back = returnTo === undefined ? undefined : sameOriginPath(returnTo, base);
      return [...providers.values()].map(({ provider }) => ({
        name: provider.name,
        label: provider.label,
        href: `${basePath}${pathOf(provider)}${back === undefined ? '' : `?returnTo=${encodeURIComponent(back)}`}`,
      }));
    },
    async signOut(req, res, signOutOptions = {}) {
      const session = await sessions.read(req);
      await sessions.signOut(req, res);
      const { upstream, known } = upstreamOf(session);
      if (known !== undefined && keeper !== undefined && typeof upstream?.tokens === 'string') {
        await keeper.forget(upstream.tokens, known.at);
      }
      if (known === undefined || known.provider.kind !== 'oidc') return undefined;
      const config = await known.at.configuration().catch(() => undefined);
      if (config?.serverMetadata().end_session_endpoint === undefined) return undefined;
      const client = await loadOpenidClient();
      const hint = (await idTokens.open(upstream?.idToken))?.t;
      const back = signOutOptions.postLogoutRedirectUri;
      return client.buildEndSessionUrl(config, {
        ...(typeof hint === 'string' && { id_token_hint: hint }),
        ...(back !== undefined && { post_logout_redirect_uri: back }),
      }).href;
    },
  } satisfies SignIn);
}
