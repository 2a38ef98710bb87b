import type { IncomingMessage } from 'node:http';
import type { Middleware } from '../core/compose.js';
import { setContextValue } from '../core/context.js';
import { HttpError } from '../core/errors/http-error.js';
import { getPrincipal, missingCredentialKey, type Principal } from '../core/principal.js';
import { published } from '../diagnostics/channels.js';
import { QUOTABLE } from '../internal/grammar.js';
import { setHeadLine } from '../internal/head.js';
import { appendVary } from '../internal/headers.js';
import { assertKnownOptions, functionOption, invalidOption } from '../internal/options.js';
import { isPromiseLike } from '../internal/promise.js';
import type { Authenticator } from './authenticator.js';
import { challenge as buildChallenge } from './authenticator.js';
import {
  type CredentialVerdict,
  createCredentialCheck,
  publishRefusal,
} from './credential-check.js';
import type { CredentialGuard } from './credential-guard.js';
import { authenticationRequired, forbiddenRole, insufficientScope } from './errors.js';
import { type ProtectedResource, resourceOption } from './protected-resource.js';
import { assertScopeTokens } from './scopes.js';

// the identification step, where test/auth/authenticate-mutants.test.ts looks for it

/** Options of {@link authenticate}. */
export interface AuthenticateOptions {
  /**
   * Let requests without any credential through without a principal (handlers then use
   * `getPrincipal(req)` or `requirePrincipal(req)`). A credential that is present but bad is
   * still a 401.
   * @defaultValue `false`
   */
  optional?: boolean;
  /**
   * The guard that counts refused credentials per client IP across every surface (give the
   * same one to the WebSocket upgrade, the authorization server and your sign-in handler):
   * once a client has spent it, every credential it sends is answered 429 without being
   * verified, a right one included, until the window ends.
   * @defaultValue none
   */
  guard?: CredentialGuard;
  /**
   * The `Cache-Control` of answers to requests that carried a credential (accepted or
   * refused), unless the route sets its own: a shared cache must never store and replay
   * them. `false` leaves the header alone. The answer's `Vary` always lists the headers the
   * authenticators read (`Authorization`, `X-API-Key`, `Cookie`).
   * @defaultValue `'no-store'`
   */
  cacheControl?: string | false;
  /**
   * Which challenges a 401 for a missing credential carries, from every configured one: for
   * instance none with `Basic` for a page's script (`Sec-Fetch-Mode` other than `navigate`),
   * whose browser would otherwise show a password dialog.
   * @defaultValue every challenge
   */
  challenges?: (req: IncomingMessage, challenges: readonly string[]) => readonly string[];
  /**
   * The protected resource these routes are (see `protectedResource()`): every `Bearer` and
   * `DPoP` challenge of a refusal then carries `resource_metadata="<its metadata URL>"`
   * (RFC 9728 §5.1), and a 401's first challenge is `Bearer` whenever an authenticator offers
   * it (MCP clients read only the first). The refusals of the middleware behind it (the 403
   * of a `requireScopes()`, a handler's 401) are answered so too.
   * @defaultValue none
   */
  resource?: ProtectedResource;
  /**
   * The scopes a request needs, computed per request (from its route, say): a 401's `Bearer`
   * and `DPoP` challenges then carry `scope="…"` (RFC 6750 §3), so that a client asks for a
   * token that will do. `undefined` or `[]`: no `scope`. It only names them: check them with
   * `requireScopes()`.
   * @defaultValue none
   */
  scopes?: (req: IncomingMessage) => readonly string[] | undefined;
}

/**
 * What {@link authenticate} returns: the middleware, and `required`, a middleware for later in
 * the chain that answers a request without a principal with the 401 `authenticate()` would
 * have given (its challenges chosen as `challenges` says). `OPTIONS` passes: it asks what a
 * path supports.
 */
export type Authentication = Middleware & { readonly required: Middleware };

const KNOWN_OPTIONS = [
  'optional',
  'guard',
  'cacheControl',
  'challenges',
  'resource',
  'scopes',
] as const satisfies readonly (keyof AuthenticateOptions)[];

/**
 * Authenticates each request with the first mechanism whose credential is present, in the
 * order given, and stores the {@link Principal} for later handlers (`getPrincipal(req)`). A
 * credential that is present but bad is a 401 at once (the next mechanism is not tried); no
 * credential at all is a 401 whose `WWW-Authenticate` lists every configured scheme
 * (RFC 9110 §11.6.1).
 *
 * @example
 * ```ts
 * const auth = authenticate([jwtBearer({ issuer, audience, jwksUrl }), apiKeyAuth({ store })]);
 * const app = compose([requestId(), auth, createRouter({ '/api/me': { GET: me } })]);
 *
 * // refused credentials spend the client's guard; then count calls by API key, else user
 * const guard = createCredentialGuard();
 * const api = compose([authenticate([basicAuth({ verify })], { guard }), rateLimit({ limit: 100 })]);
 *
 * // optional first (a bad credential is still a 401), required after the router's match
 * const auth = authenticate(authenticators, { optional: true, guard });
 * compose([auth, router.match, rateLimit(), auth.required, router.dispatch]);
 *
 * // RFC 9728: the challenges name the resource's metadata, and the scopes the route needs
 * const api = protectedResource({ resource: 'https://api.example.com', authorizationServers });
 * const auth = authenticate([bearer], {
 *   resource: api,
 *   scopes: (req) => (req.method === 'GET' ? ['read:messages'] : ['write:messages']),
 * });
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-11.6.1 | RFC 9110 §11.6.1}
 */
export function authenticate(
  authenticators: readonly Authenticator[],
  options: AuthenticateOptions = {},
): Authentication {
  if (!Array.isArray(authenticators) || authenticators.length === 0) {
    throw invalidOption('authenticate(): give at least one authenticator');
  }
  assertKnownOptions('authenticate()', options, KNOWN_OPTIONS);
  const optional = options.optional ?? false;
  const credentials = createCredentialCheck('authenticate()', authenticators, {
    guard: options.guard,
    surface: 'http',
    resource: options.resource,
    scopes: options.scopes,
  });
  const { challenges } = credentials;
  const cacheControl = options.cacheControl ?? 'no-store';
  if (
    cacheControl !== false &&
    (typeof cacheControl !== 'string' || cacheControl === '' || !QUOTABLE.test(cacheControl))
  ) {
    throw invalidOption('authenticate(): `cacheControl` must be a Cache-Control value or false');
  }
  const pick = functionOption('authenticate()', 'challenges', options.challenges);
  const unanswered = (req: IncomingMessage) =>
    authenticationRequired(pick === undefined ? challenges : pick(req, challenges));
  // check() answers its refusals itself; the later ones (required, requirePrincipal) here
  const missing = (req: IncomingMessage) => credentials.answer(req, unanswered(req));
  const answersRefusals = options.resource !== undefined || options.scopes !== undefined;
  const vary = Object.freeze([...new Set(authenticators.flatMap((a) => a.headers ?? []))]);
  const required: Middleware = (req, _res, next) => {
    if (req.method !== 'OPTIONS' && getPrincipal(req) === undefined) {
      const refusal = missing(req);
      if (published.authRefused.hasSubscribers) publishRefusal(req, refusal, 'http');
      throw refusal;
    }
    return next();
  };
  const answered = (req: IncomingMessage, error: unknown) =>
    error instanceof HttpError ? credentials.answer(req, error) : error;
  /** What follows the verdict: the answer's Cache-Control, a refusal thrown, or the rest. */
  const proceed: (...args: [...Parameters<Middleware>, CredentialVerdict]) => Promise<void> = (
    req,
    res,
    next,
    verdict,
  ) => {
    if (verdict.presented && cacheControl !== false && !res.hasHeader('Cache-Control')) {
      setHeadLine(res, 'Cache-Control', 'cache-control', cacheControl);
    }
    if (verdict.refusal !== undefined) throw verdict.refusal;
    if (verdict.principal === undefined) {
      setContextValue(req, missingCredentialKey, () => missing(req));
    }
    if (!answersRefusals) return next();
    // the refusals of what runs behind (requireScopes()' 403, a handler's 401) name the resource too
    let rest: Promise<void>;
    try {
      rest = next();
    } catch (error) {
      throw answered(req, error);
    }
    // a next of an adapter may answer without a promise
    if (!isPromiseLike(rest)) return rest;
    return rest.then(undefined, (error: unknown) => {
      throw answered(req, error);
    });
  };
  // synchronous up to the next middleware while the guard and the authenticators are
  const middleware: Middleware = function authenticateMiddleware(req, res, next) {
    if (vary.length > 0) appendVary(res, vary);
    const verdict = credentials.check(req, optional ? undefined : unanswered);
    if (!isPromiseLike(verdict)) return proceed(req, res, next, verdict);
    return verdict.then((settled) => proceed(req, res, next, settled));
  };
  return Object.assign(middleware, { required });
}

function principalOrFail(req: Parameters<Middleware>[0]): Principal {
  const principal = getPrincipal(req);
  if (principal === undefined) throw authenticationRequired([]);
  return principal;
}

/** Options of {@link requireScopes}. */
export interface RequireScopesOptions {
  /**
   * Which principals the check applies to, by `method`. Others pass: the reference service,
   * for one, limits bearer tokens by their scopes while a session carries the user's full
   * rights.
   * @defaultValue every method
   */
  methods?: readonly string[];
  /**
   * The realm quoted in the bearer `insufficient_scope` challenge.
   * @defaultValue none
   */
  realm?: string;
  /**
   * The protected resource (see `protectedResource()`): the `insufficient_scope` challenge
   * then carries `resource_metadata="<its metadata URL>"` (RFC 9728 §5.1), for a client to
   * step up (ask again with every scope the request needs).
   * @defaultValue none
   */
  resource?: ProtectedResource;
}

const SCOPE_OPTIONS = [
  'methods',
  'realm',
  'resource',
] as const satisfies readonly (keyof RequireScopesOptions)[];

/**
 * Lets a request through only when its principal holds every one of `scopes`; otherwise a
 * 403 problem, with `WWW-Authenticate: Bearer error="insufficient_scope", scope="…"` for
 * bearer tokens (RFC 6750 §3.1). No principal at all is a 401. A scope is any RFC 6749 scope
 * token, as issuers name them: `read:messages`, Entra's `Messages.Read`, Cognito's
 * `messages-api/read`.
 *
 * @example
 * ```ts
 * createRouter({ '/api/messages': { GET: compose([requireScopes(['read:messages']), list]) } });
 * // the step-up challenge names the resource's metadata (RFC 9728 §5.1)
 * const writes = requireScopes(['write:messages'], { resource: api });
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc6750#section-3.1 | RFC 6750 §3.1}
 */
export function requireScopes(
  scopes: readonly string[],
  options: RequireScopesOptions = {},
): Middleware {
  if (!Array.isArray(scopes) || scopes.length === 0) {
    throw invalidOption('requireScopes(): give at least one scope');
  }
  assertScopeTokens('requireScopes()', scopes);
  assertKnownOptions('requireScopes()', options, SCOPE_OPTIONS);
  const resource = resourceOption('requireScopes()', options.resource);
  const required = scopes.slice();
  const methods = options.methods === undefined ? undefined : new Set(options.methods);
  // an access token's answer names its scheme (RFC 6750 §3.1, RFC 9449 §7.1)
  const tokenChallenge = (scheme: string) =>
    buildChallenge(scheme, {
      realm: options.realm,
      error: 'insufficient_scope',
      error_description: 'The access token lacks a required scope.',
      // every scope the request needs, held ones too: the client asks for them all (step-up)
      scope: required.join(' '),
      resource_metadata: resource?.metadataUrl,
    });
  const challenges = new Map([
    ['bearer', tokenChallenge('Bearer')],
    ['dpop', tokenChallenge('DPoP')],
  ]);
  return function requireScopesMiddleware(req, _res, next) {
    const principal = principalOrFail(req);
    if (methods !== undefined && !methods.has(principal.method)) return next();
    const missing = required.filter((s) => !principal.scopes.includes(s));
    if (missing.length > 0) {
      throw insufficientScope(missing, challenges.get(principal.method));
    }
    return next();
  };
}

/**
 * Lets a request through only when its principal's `role`, or one of its `roles`, is one of
 * `roles`; otherwise a 403 problem. No principal at all is a 401.
 *
 * @example
 * ```ts
 * createRouter({ '/api/keys': { POST: compose([requireRole(['admin']), createKey]) } });
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-15.5.4 | RFC 9110 §15.5.4}
 */
export function requireRole(roles: readonly string[]): Middleware {
  if (
    !Array.isArray(roles) ||
    roles.length === 0 ||
    roles.some((r) => typeof r !== 'string' || r === '')
  ) {
    throw invalidOption('requireRole(): give at least one role name');
  }
  const allowed = new Set(roles);
  const list = roles.slice();
  return function requireRoleMiddleware(req, _res, next) {
    const principal = principalOrFail(req);
    const held = principal.role !== undefined && allowed.has(principal.role);
    const roles = Array.isArray(principal.roles) ? principal.roles : [];
    if (!held && !roles.some((role) => allowed.has(role))) throw forbiddenRole(list);
    return next();
  };
}
