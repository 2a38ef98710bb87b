import type { IncomingMessage } from 'node:http';
import { createContextKey, getContextValue, setContextValue } from '../core/context.js';
import { HttpError } from '../core/errors/errors.js';
import { type Principal, setPrincipal } from '../core/principal.js';
import {
  type AuthRefusedMessage,
  type AuthSucceededMessage,
  published,
} from '../diagnostics/channels.js';
import { invalidOption } from '../internal/options.js';
import { isPromiseLike } from '../internal/promise.js';
import type { Authenticator } from './authenticator.js';
import { bareBearerChallenge, withResourceParams } from './challenge-list.js';
import { guardOption, isRefusal } from './credential-guard.js';
import { type ProtectedResource, resourceOption } from './protected-resource.js';
import { assertScopeTokens } from './scopes.js';

// Not part of the public API: the one sequence every surface that takes a credential runs
// (`authenticate()` over HTTP, the WebSocket upgrade). Each surface keeps only how it answers:
// a response for `authenticate()`, a raw answer on the socket for an upgrade.

/** The surface a credential came over, as the diagnostics messages name it. */
export type CredentialSurface = AuthSucceededMessage['surface'];

/**
 * What {@link CredentialCheck.check} concluded about a request, a failure of ours apart (that
 * is thrown). `presented` says whether the answer concerns a credential the client sent (the
 * guard's 429 counts as one): such an answer must not be stored by a shared cache.
 */
export type CredentialVerdict =
  /** A credential was accepted: `principal` is set on the request, `authSucceeded` published. */
  | { readonly principal: Principal; readonly refusal?: undefined; readonly presented: true }
  /** The request is refused with `refusal` (already counted by the guard, and published). */
  | { readonly principal?: undefined; readonly refusal: HttpError; readonly presented: boolean }
  /** No credential, and none was required: nothing published. */
  | { readonly principal?: undefined; readonly refusal?: undefined; readonly presented: false };

/** The guard → identify → publish sequence of one surface: see {@link createCredentialCheck}. */
export interface CredentialCheck {
  /** The challenges of every authenticator, in order, for a "no credential" 401. */
  readonly challenges: readonly string[];
  /**
   * `refusal` as this surface answers it: with a `resource`, its `Bearer`/`DPoP` challenges
   * carry `resource_metadata` (and on a 401 the `scope` the request needs), `Bearer` first.
   * Already applied to the refusals of {@link CredentialCheck.check}.
   */
  answer(req: IncomingMessage, refusal: HttpError): HttpError;
  /** The authenticators alone, in order: see {@link createIdentifier}. */
  identify(req: IncomingMessage): Identified;
  /**
   * Checks the guard (a client that has spent it is refused with its 429, unverified), runs
   * the authenticators, tells the guard of a refused credential (its 429 then replaces the
   * verdict), sets the principal on the request and publishes `authSucceeded` or
   * `authRefused`. A request without any credential is refused with `missing(req)` (not
   * counted by the guard), or passes without a principal when `missing` is not given.
   * Throws a failure of ours (an error that is no `HttpError`, a 5xx), unpublished but for
   * the guard's own 503 (its store down), which observers hear of as a refusal. Synchronous
   * (no promise) while the guard and the authenticators are, as with memory stores and a
   * cached token.
   */
  check(
    req: IncomingMessage,
    missing?: (req: IncomingMessage) => HttpError,
  ): CredentialVerdict | Promise<CredentialVerdict>;
}

/** What the authenticators found: a promise only when one of them answered with one. */
export type Identified = Principal | undefined | Promise<Principal | undefined>;

/**
 * The sequence shared by `authenticate()` and the WebSocket upgrade, made once per surface:
 * `authenticators` tried in order (see {@link createIdentifier}) within the budget of `guard`
 * (checked: a `CredentialGuard` or `undefined`), the verdict published on `surface`.
 *
 * @example
 * ```ts
 * const credentials = createCredentialCheck('myUpgrade()', [jwtBearer(options)], { guard, surface: 'ws' });
 * const verdict = await credentials.check(req, () => authenticationRequired(credentials.challenges));
 * if (verdict.refusal !== undefined) throw verdict.refusal;
 * ```
 */
export function createCredentialCheck(
  owner: string,
  authenticators: readonly Authenticator[],
  options: {
    readonly guard: unknown;
    readonly surface: CredentialSurface;
    /** Whose metadata the challenges name (RFC 9728 §5.1). */
    readonly resource?: unknown;
    /** The scopes a request needs, named by the `scope` of its 401's challenges. */
    readonly scopes?: unknown;
  },
): CredentialCheck {
  const { challenges, identify } = createIdentifier(owner, authenticators);
  const guard = guardOption(owner, options.guard);
  const { surface } = options;
  const answer = resourceAnswer(owner, challenges, options.resource, options.scopes);
  /** Rethrows a failure of the guard; its 503 (its store down) is a refusal observers hear of. */
  function guardFailed(req: IncomingMessage, error: unknown): never {
    if (
      error instanceof HttpError &&
      error.status === 503 &&
      published.authRefused.hasSubscribers
    ) {
      publishRefusal(req, error, surface);
    }
    throw error;
  }
  const refused = (req: IncomingMessage, given: HttpError, presented: boolean) => {
    const refusal = answer(req, given);
    if (published.authRefused.hasSubscribers) publishRefusal(req, refusal, surface);
    return { refusal, presented } as const;
  };
  type Missing = ((req: IncomingMessage) => HttpError) | undefined;
  type Verdict = CredentialVerdict | Promise<CredentialVerdict>;
  /** The guard's 429 (or its failure) once it counted a refused credential. */
  const throttled = (req: IncomingMessage, error: unknown): CredentialVerdict => {
    if (!(error instanceof HttpError) || error.status >= 500) guardFailed(req, error);
    return refused(req, error, true);
  };
  /** A credential refused (a verdict, counted by the guard first), or a failure of ours thrown. */
  const refusedCredential = (req: IncomingMessage, error: unknown): Verdict => {
    if (!(error instanceof HttpError) || error.status >= 500) throw error;
    if (guard === undefined || !isRefusal(error)) return refused(req, error, true);
    let counted: Promise<void>;
    try {
      counted = guard.refused(req);
    } catch (failure) {
      return throttled(req, failure);
    }
    return Promise.resolve(counted).then(
      () => refused(req, error, true),
      (failure) => throttled(req, failure),
    );
  };
  /** The guard's answer before any credential is read: its 429 a verdict, its failure thrown. */
  const guardRefused = (req: IncomingMessage, error: unknown): Verdict => {
    if (!(error instanceof HttpError) || error.status >= 500) guardFailed(req, error);
    return refusedCredential(req, error);
  };
  const settle = (req: IncomingMessage, principal: Principal | undefined, missing: Missing) => {
    try {
      if (principal !== undefined) {
        setPrincipal(req, principal);
        if (published.authSucceeded.hasSubscribers) publishSuccess(req, principal, surface);
        return { principal, presented: true } as const;
      }
      return missing === undefined ? NOTHING_PRESENTED : refused(req, missing(req), false);
    } catch (error) {
      return refusedCredential(req, error);
    }
  };
  const identified = (req: IncomingMessage, missing: Missing): Verdict => {
    let found: Identified;
    try {
      found = identify(req);
    } catch (error) {
      return refusedCredential(req, error);
    }
    if (!isPromiseLike(found)) return settle(req, found, missing);
    return found.then(
      (principal) => settle(req, principal, missing),
      (error) => refusedCredential(req, error),
    );
  };
  return {
    challenges,
    answer,
    identify,
    check(req, missing) {
      if (guard === undefined) return identified(req, missing);
      let checked: void | Promise<void>;
      try {
        checked = guard.check(req);
      } catch (error) {
        return guardRefused(req, error);
      }
      if (!isPromiseLike(checked)) return identified(req, missing);
      return checked.then(
        () => identified(req, missing),
        (error) => guardRefused(req, error),
      );
    },
  };
}

/** The verdict on a request without any credential, where none is required. */
const NOTHING_PRESENTED: CredentialVerdict = Object.freeze({ presented: false });

/**
 * How a surface with `resource` (checked) and `scopes` (a function of the request, checked)
 * answers a refusal: see {@link CredentialCheck.answer}.
 */
function resourceAnswer(
  owner: string,
  challenges: readonly string[],
  resourceValue: unknown,
  scopesValue: unknown,
): (req: IncomingMessage, refusal: HttpError) => HttpError {
  const resource: ProtectedResource | undefined = resourceOption(owner, resourceValue);
  if (scopesValue !== undefined && typeof scopesValue !== 'function') {
    throw invalidOption(`${owner}: \`scopes\` must be a function of the request`);
  }
  const scopesOf = scopesValue as
    | ((req: IncomingMessage) => readonly string[] | undefined)
    | undefined;
  if (resource === undefined && scopesOf === undefined) return (_req, refusal) => refusal;
  const bearer = bareBearerChallenge(challenges);
  const resourceMetadata = resource?.metadataUrl;
  return (req, refusal) => {
    const needed = scopesOf?.(req);
    if (needed !== undefined) assertScopeTokens(owner, needed);
    const scope = needed === undefined || needed.length === 0 ? undefined : needed.join(' ');
    return withResourceParams(refusal, { resourceMetadata, scope, bearer }) as HttpError;
  };
}

/** The scheme of the authenticator that refused the request's credential. */
const refusedSchemeKey = createContextKey<string>('refusedScheme');

/**
 * `authSucceeded` for `principal` on `surface`.
 * @internal
 */
export function publishSuccess(
  req: IncomingMessage,
  principal: Principal,
  surface: CredentialSurface,
): void {
  published.authSucceeded.publish({
    req,
    mechanism: principal.method,
    sub: principal.sub,
    surface,
  } satisfies AuthSucceededMessage);
}

/**
 * `authRefused` for `refusal` (what the request is answered) on `surface`.
 * @internal
 */
export function publishRefusal(
  req: IncomingMessage,
  refusal: unknown,
  surface: AuthRefusedMessage['surface'],
): void {
  // a failure of ours (not an HttpError, or a 5xx other than the guard's 503) is no refusal
  if (!(refusal instanceof HttpError) || (refusal.status >= 500 && refusal.status !== 503)) return;
  published.authRefused.publish({
    req,
    status: refusal.status,
    code: refusal.code,
    mechanism: getContextValue(req, refusedSchemeKey),
    surface,
  } satisfies AuthRefusedMessage);
}

/**
 * The identification step of {@link createCredentialCheck}: tries the mechanisms in order and
 * returns the first principal found, `undefined` when no credential was presented; a bad
 * credential throws its 401, given the challenges of every mechanism when it carries none.
 * `challenges` lists them, for the caller's own "no credential" 401.
 *
 * @example
 * ```ts
 * const { identify, challenges } = createIdentifier('myUpgrade()', [jwtBearer(options)]);
 * const principal = await identify(req);
 * if (principal === undefined) throw authenticationRequired(challenges);
 * ```
 */
export function createIdentifier(
  owner: string,
  authenticators: readonly Authenticator[],
): {
  challenges: readonly string[];
  identify(req: IncomingMessage): Identified;
} {
  for (const a of authenticators) {
    if (typeof a?.authenticate !== 'function') {
      throw invalidOption(`${owner}: every authenticator needs an authenticate(req) method`);
    }
  }
  const list = authenticators.slice();
  const challenges = Object.freeze(
    list.flatMap((a) => (a.challenge === undefined ? [] : [a.challenge])),
  );
  const refusedBy = (req: IncomingMessage, authenticator: Authenticator, error: unknown) => {
    setContextValue(req, refusedSchemeKey, authenticator.scheme);
    return withChallenges(error, challenges);
  };
  /** The authenticators from `start` on, synchronously until one answers with a promise. */
  const identifyFrom = (req: IncomingMessage, start: number): Identified => {
    for (let i = start; i < list.length; i++) {
      const authenticator = list[i]!;
      let principal: Identified;
      try {
        principal = authenticator.authenticate(req);
      } catch (error) {
        throw refusedBy(req, authenticator, error);
      }
      if (isPromiseLike(principal)) {
        return principal.then(
          (found) => (found !== undefined ? found : identifyFrom(req, i + 1)),
          (error) => {
            throw refusedBy(req, authenticator, error);
          },
        );
      }
      if (principal !== undefined) return principal;
    }
    return undefined;
  };
  return { challenges, identify: (req) => identifyFrom(req, 0) };
}

/** A 401 must name a way to authenticate (RFC 9110 §15.5.2): add ours when it has none. */
function withChallenges(error: unknown, challenges: readonly string[]): unknown {
  if (!(error instanceof HttpError) || error.status !== 401 || challenges.length === 0)
    return error;
  if (Object.keys(error.headers).some((name) => name.toLowerCase() === 'www-authenticate'))
    return error;
  return new HttpError(401, error.detail, {
    code: error.code,
    type: error.type,
    title: error.title,
    errors: error.errors,
    extensions: error.extensions,
    cause: error.cause,
    headers: { ...error.headers, 'WWW-Authenticate': challenges },
  });
}
