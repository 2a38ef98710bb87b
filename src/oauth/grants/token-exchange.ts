import { JwtError } from '../../auth/jwt/error.js';
import type { JwtVerifier } from '../../auth/jwt/jwt.js';
import type { JwtClaims } from '../../core/jwt-types.js';
import {
  assertKnownOptions,
  booleanOption,
  functionOption,
  invalidOption,
} from '../../internal/options.js';
import { isConfidential, type OAuthClient } from '../clients/client.js';
import { narrowScopes } from '../clients/scope.js';
import type { OAuthContext } from '../context.js';
import { OAuthError } from '../protocol/errors.js';
import { resourcesOf, scopeForAudience } from '../resources.js';
import type { ActorClaim } from '../tokens/issue.js';
import {
  createAnyResourceVerifier,
  isAccessTokenRevoked,
  revokedTokenKey,
  verifyOwnIdToken,
} from '../tokens/verify.js';
import {
  assertCanIssue,
  defineGrant,
  type Grant,
  requiredParameter,
  type TokenBinding,
} from './contract.js';

/**
 * The `grant_type` of token exchange (RFC 8693 §2.1).
 *
 * @example
 * ```ts
 * const demoService = await defineClient({
 *   clientId: 'demo-service', secret: process.env.DEMO_SERVICE_SECRET,
 *   grantTypes: ['client_credentials', TOKEN_EXCHANGE_GRANT], redirectUris: [], scopes: ['read:messages'],
 * });
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc8693#section-2.1 | RFC 8693 §2.1}
 */
export const TOKEN_EXCHANGE_GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange';

const ACCESS_TOKEN = 'urn:ietf:params:oauth:token-type:access_token';
const ID_TOKEN = 'urn:ietf:params:oauth:token-type:id_token';

/**
 * One exchange as the `allow` policy of {@link tokenExchangeGrant} sees it, once every token
 * is verified and the target and scope are known.
 */
export interface TokenExchange {
  /** The authenticated client asking. */
  readonly client: OAuthClient;
  /** The verified claims of the subject token (whose `sub` the new token carries). */
  readonly subject: Readonly<JwtClaims>;
  /** `urn:ietf:params:oauth:token-type:access_token` or `…:id_token`. */
  readonly subjectTokenType: string;
  /** The verified claims of the actor token, when the request has one. */
  readonly actor: Readonly<JwtClaims> | undefined;
  /** The audience of the new token: one of `targets`. */
  readonly target: string;
  /** The scope of the new token. */
  readonly scope: readonly string[];
}

/** Options of {@link tokenExchangeGrant}. */
export interface TokenExchangeOptions {
  /**
   * The targets a new token may be for: each a `resource` (an absolute URI, RFC 8707) or an
   * `audience` (a name) a request may ask for, and the new token's `aud`. A request naming
   * none gets the first. Subject tokens of this server are taken whichever of these, or the
   * server's default resource, they were issued for.
   * @defaultValue the identifiers of the server's `resources`, the default one first
   */
  targets?: readonly string[];
  /**
   * The clients that may exchange tokens; each must also name the grant in its `grantTypes`
   * (otherwise `unauthorized_client` before this grant runs).
   * @defaultValue every client whose `grantTypes` names {@link TOKEN_EXCHANGE_GRANT}
   */
  clients?: readonly string[];
  /**
   * Take this server's ID tokens as `subject_token` (and `actor_token`), with
   * `urn:ietf:params:oauth:token-type:id_token`: an ID token issued to the asking client. An
   * ID token carries no scope and no grant: the new token's scope is bounded by the
   * client's scopes alone, and revoking the user's grant does not reach it (it still ends
   * with the ID token). Give an `allow` policy with it.
   * @defaultValue `false`: access tokens only
   */
  idTokens?: boolean;
  /**
   * Decides who may exchange what, once the default checks passed: `false` refuses with
   * `unauthorized_client`.
   * @defaultValue none: the default checks alone
   * @example
   * ```ts
   * allow: ({ client, subject }) => client.clientId !== 'reports' || subject.role !== 'admin',
   * ```
   */
  allow?: (exchange: TokenExchange) => boolean | Promise<boolean>;
}

const OPTIONS = [
  'targets',
  'clients',
  'idTokens',
  'allow',
] as const satisfies readonly (keyof TokenExchangeOptions)[];

const OWNER = 'tokenExchangeGrant()';

function listOption(name: string, value: readonly string[] | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string' || v === '')) {
    throw invalidOption(`${OWNER}: \`${name}\` must be a list of non-empty strings`);
  }
  return [...value];
}

/** A target asked for: `resource` (an absolute URI without fragment) or `audience`, one. */
function requestedTarget(params: ReadonlyMap<string, string>): string | undefined {
  // the token endpoint hands the `resource` values separated by spaces (RFC 8707 lets them repeat)
  const resources = resourcesOf(params);
  if (resources.length > 1) {
    throw new OAuthError('invalid_target', 'Name one resource: a new token is for one target.');
  }
  const resource = resources[0];
  const audience = params.get('audience');
  if (resource !== undefined && (!URL.canParse(resource) || resource.includes('#'))) {
    throw new OAuthError('invalid_target', 'resource must be an absolute URI without fragment.');
  }
  if (resource !== undefined && audience !== undefined && resource !== audience) {
    throw new OAuthError('invalid_target', 'Name one target: resource or audience.');
  }
  const target = resource ?? audience;
  if (target === '') throw new OAuthError('invalid_target', 'The target is empty.');
  return target;
}

/** The `…_token_type` of a token parameter: required with the token, one this grant takes. */
function tokenTypeOf(
  params: ReadonlyMap<string, string>,
  name: 'subject_token_type' | 'actor_token_type',
  idTokens: boolean,
): string {
  const type = requiredParameter(params, name);
  if (type === ACCESS_TOKEN || (idTokens && type === ID_TOKEN)) return type;
  throw new OAuthError('invalid_request', `This ${name} is not supported.`);
}

/** The request's tokens and their types: `invalid_request` for what is missing or unsupported. */
function tokensOf(params: ReadonlyMap<string, string>, idTokens: boolean) {
  const subjectToken = requiredParameter(params, 'subject_token');
  const subjectType = tokenTypeOf(params, 'subject_token_type', idTokens);
  const requestedType = params.get('requested_token_type');
  if (requestedType !== undefined && requestedType !== ACCESS_TOKEN) {
    throw new OAuthError('invalid_request', 'This requested_token_type is not supported.');
  }
  const actorToken = params.get('actor_token');
  if (actorToken === undefined) {
    if (params.has('actor_token_type')) {
      throw new OAuthError('invalid_request', 'actor_token_type goes with an actor_token.');
    }
    return { subjectToken, subjectType, actor: undefined };
  }
  const actor = { token: actorToken, type: tokenTypeOf(params, 'actor_token_type', idTokens) };
  return { subjectToken, subjectType, actor };
}

const scopesOf = (claims: JwtClaims): string[] =>
  typeof claims.scope === 'string' ? claims.scope.split(' ').filter((s) => s !== '') : [];

/** The scope of the new token: the one asked for, within `allowed`; none asked: all of it. */
function narrowedScope(allowed: readonly string[], requested: string | undefined): string[] {
  const scope = narrowScopes(
    allowed,
    requested,
    "The requested scope is wider than the subject token's or this client's.",
  );
  if (scope.length === 0) {
    throw new OAuthError('invalid_scope', 'No scope of the subject token is allowed here.');
  }
  return scope;
}

/** The `act` of the new token: the actor, with the subject token's own `act` nested in it. */
function actOf(subject: JwtClaims, actorSub: string): ActorClaim {
  const previous = subject.act;
  if (previous === undefined) return { sub: actorSub };
  if (!isActorClaim(previous)) {
    throw new OAuthError('invalid_grant', 'The subject token has a malformed act claim.');
  }
  return { sub: actorSub, act: previous };
}

function isActorClaim(value: unknown): value is ActorClaim {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const { sub, act } = value as Record<string, unknown>;
  return typeof sub === 'string' && (act === undefined || isActorClaim(act));
}

/**
 * `may_act` of the subject token (RFC 8693 §4.4), when it has one: the actor must be the
 * party it names (`sub`, and `client_id` when it names one).
 */
function checkMayAct(subject: JwtClaims, actorSub: string, client: OAuthClient): void {
  const mayAct = subject.may_act;
  if (mayAct === undefined) return;
  const named = typeof mayAct === 'object' && mayAct !== null ? (mayAct as JwtClaims) : {};
  const allowed =
    named.sub === actorSub &&
    (named.client_id === undefined || named.client_id === client.clientId);
  if (!allowed) {
    throw new OAuthError('invalid_grant', 'The subject token does not let this party act for it.');
  }
}

const refused = (which: string) =>
  new OAuthError('invalid_grant', `The ${which} is invalid, expired or revoked.`);

/**
 * The token exchange grant (RFC 8693), for delegation: a client trades a token this server
 * issued (`subject_token`) for a new access token acting on its subject's behalf — `sub` the
 * subject's, `client_id` the asking client's, `act: { sub }` naming the actor (the actor
 * token's `sub`, else the client; nested `act` when the subject token already has one,
 * §4.1), `aud` the target asked for (`resource` or `audience`, one of `targets`), `scope`
 * narrowed from the subject token's and within the client's (`invalid_scope` otherwise). It
 * ends no later than the subject token, carries its `grant_id` (revoking the subject's grant
 * ends it; a subject token without one is linked by its `jti`), is DPoP-bound when the
 * request has a proof, and comes with no refresh token. A `may_act` claim of the subject
 * token is honoured. A DPoP-bound subject token is exchanged only with a proof of its key.
 * Only confidential clients exchange: the actor a token names must have authenticated.
 *
 * Refusals (RFC 8693 §2.2.2, RFC 6749 §5.2): `invalid_request` (a missing or unsupported
 * `subject_token_type`, `actor_token_type` or `requested_token_type`), `invalid_grant` (a
 * subject or actor token that is not a live token of this server, or an actor token issued
 * to another client), `unauthorized_client` (a client not in `clients`, or refused by
 * `allow`), `invalid_target`, `invalid_scope`.
 *
 * @example
 * ```ts
 * const auth = createAuthorizationServer({
 *   ...options,
 *   grants: [
 *     ...defaultGrants,
 *     tokenExchangeGrant({ targets: [issuer, `${issuer}/mcp`], clients: ['demo-service'] }),
 *   ],
 * });
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc8693 | RFC 8693}
 */
export function tokenExchangeGrant(options: TokenExchangeOptions = {}): Grant {
  assertKnownOptions(OWNER, options, OPTIONS);
  const targets = listOption('targets', options.targets);
  const clients = listOption('clients', options.clients);
  const idTokens = booleanOption(OWNER, 'idTokens', options.idTokens, false);
  const allow = functionOption(OWNER, 'allow', options.allow);
  const verifiers = new WeakMap<OAuthContext, JwtVerifier>();
  const targetsOf = (ctx: OAuthContext) =>
    targets ?? ctx.resources.map((resource) => resource.identifier);

  /** A token of this server, verified as its type says, or `invalid_grant`. */
  async function verified(
    ctx: OAuthContext,
    client: OAuthClient,
    token: string,
    type: string,
    which: string,
  ): Promise<JwtClaims> {
    try {
      if (type === ID_TOKEN) return (await verifyOwnIdToken(ctx, token, client.clientId)).payload;
      let verifier = verifiers.get(ctx);
      if (verifier === undefined) {
        verifier = createAnyResourceVerifier(ctx, targetsOf(ctx));
        verifiers.set(ctx, verifier);
      }
      const { payload } = await verifier.verify(token);
      if (await isAccessTokenRevoked(ctx, payload)) throw refused(which);
      return payload;
    } catch (error) {
      if (error instanceof JwtError) throw refused(which);
      throw error;
    }
  }

  return defineGrant({
    type: TOKEN_EXCHANGE_GRANT,
    parameters: [
      'subject_token',
      'subject_token_type',
      'actor_token',
      'actor_token_type',
      'requested_token_type',
      'resource',
      'audience',
      'scope',
    ],
    async handle(ctx, client, params, binding) {
      const request = tokensOf(params, idTokens);
      // the actor named in the new token must have proven who it is
      if (!isConfidential(client)) {
        throw new OAuthError('unauthorized_client', 'Token exchange is for confidential clients.');
      }
      if (clients !== undefined && !clients.includes(client.clientId)) {
        throw new OAuthError('unauthorized_client', 'This client may not exchange tokens.');
      }
      const allowedTargets = targetsOf(ctx);
      const target = requestedTarget(params) ?? allowedTargets[0]!;
      if (!allowedTargets.includes(target)) {
        throw new OAuthError('invalid_target', 'Tokens are not issued for this target.');
      }
      const subjectType = request.subjectType;
      const subject = await verified(
        ctx,
        client,
        request.subjectToken,
        subjectType,
        'subject_token',
      );
      checkSubjectBinding(subject, binding);
      if (!(Number(subject.exp) - Math.floor(Date.now() / 1000) >= 1)) {
        throw refused('subject_token');
      }
      const actor =
        request.actor === undefined
          ? undefined
          : await verified(ctx, client, request.actor.token, request.actor.type, 'actor_token');
      // an actor token is the asking client's own (an ID token: issued to it, checked above)
      if (
        actor !== undefined &&
        request.actor?.type === ACCESS_TOKEN &&
        actor.client_id !== client.clientId
      ) {
        throw new OAuthError('invalid_grant', 'The actor_token was issued to another client.');
      }
      const actorSub = actor === undefined ? client.clientId : String(actor.sub);
      checkMayAct(subject, actorSub, client);
      const allowedScope =
        subjectType === ID_TOKEN
          ? [...client.scopes]
          : scopesOf(subject).filter((s) => client.scopes.includes(s));
      // a token for a configured resource carries only the scopes it understands (RFC 8707)
      const scope = scopeForAudience(
        ctx.resources,
        [target],
        narrowedScope(allowedScope, params.get('scope')),
      );
      if (scope.length === 0) {
        throw new OAuthError(
          'invalid_scope',
          'No scope asked for is one this resource understands.',
        );
      }
      const exchange = { client, subject, subjectTokenType: subjectType, actor, target, scope };
      if (allow !== undefined && (await allow(exchange)) !== true) {
        throw new OAuthError('unauthorized_client', 'This exchange is not allowed.');
      }
      await assertCanIssue(ctx, binding);
      return issueExchanged(ctx, client, exchange, actOf(subject, actorSub), binding);
    },
  });
}

/**
 * A DPoP-bound subject token (`cnf.jkt`) goes only with a proof of its key (RFC 9449): its
 * binding would mean nothing if anyone holding it could trade it for an unbound one.
 */
function checkSubjectBinding(subject: JwtClaims, binding: TokenBinding): void {
  const cnf = subject.cnf as { jkt?: unknown } | undefined;
  if (cnf?.jkt !== undefined && cnf.jkt !== binding.jkt) {
    throw new OAuthError(
      'invalid_grant',
      'The subject_token is bound to a DPoP key: send a DPoP proof of that key.',
    );
  }
}

/** The grant the new token belongs to: the subject's, or the subject token itself. */
function grantOf(subject: JwtClaims): string | undefined {
  if (typeof subject.grant_id === 'string') return subject.grant_id;
  return typeof subject.jti === 'string' && subject.jti !== ''
    ? revokedTokenKey(subject.jti)
    : undefined;
}

async function issueExchanged(
  ctx: OAuthContext,
  client: OAuthClient,
  exchange: TokenExchange,
  act: ActorClaim,
  binding: TokenBinding,
) {
  const { subject, scope, target } = exchange;
  const { jkt } = binding;
  const grantId = grantOf(subject);
  const name = typeof subject.name === 'string' ? subject.name : undefined;
  const role = typeof subject.role === 'string' ? subject.role : undefined;
  const access = await ctx.tokens.accessToken({
    sub: String(subject.sub),
    clientId: client.clientId,
    scope,
    audience: target,
    act,
    expiresAt: Number(subject.exp),
    ...(grantId !== undefined && { grantId }),
    ...((name !== undefined || role !== undefined) && {
      user: { ...(name !== undefined && { name }), ...(role !== undefined && { role }) },
    }),
    ...(jkt !== undefined && { jkt }),
  });
  return {
    access_token: access.token,
    issued_token_type: ACCESS_TOKEN,
    token_type: jkt === undefined ? ('Bearer' as const) : ('DPoP' as const),
    expires_in: access.expiresIn,
    scope: scope.join(' '),
  };
}
