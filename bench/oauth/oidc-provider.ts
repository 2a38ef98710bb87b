/**
 * oidc-provider 8 (panva's certified OpenID Connect / OAuth 2.0 server, on Koa) with one
 * `client_credentials` client authenticating with `client_secret_basic`, and one resource
 * server whose access tokens are JWTs signed RS256 (2048-bit key made at start), the same
 * claims and lifetime as portico's. No interactions are mounted (production settings: no
 * `devInteractions`, own cookie keys). Per `POST /token` it runs its Koa stack (error
 * handler, CORS, body parser, parameter and client-authentication middleware: a
 * constant-time compare of the secret, which it keeps in clear), resolves the resource
 * (`defaultResource` + `getResourceServerInfo`), and signs the token with `jose`.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import Provider, { errors } from 'oidc-provider';
import { serve } from '../lib/serve.js';
import { ACCESS_TOKEN_TTL, AUDIENCE, CLIENT_ID, CLIENT_SECRET, ISSUER, SCOPE } from './shared.js';

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const signingJwk = { ...privateKey.export({ format: 'jwk' }), kid: 'bench-rs256', use: 'sig' };

/**
 * The provider's storage: a client_credentials JWT access token is not stored, so nothing is
 * written. Unknown client ids are looked up here (found: none); any write would fail the
 * request, which the check before measuring would catch. (Replaces the development-only
 * in-memory adapter, which warns at start.)
 */
class NoStorage {
  async find(): Promise<undefined> {
    return undefined;
  }
  async findByUid(): Promise<undefined> {
    return undefined;
  }
  async findByUserCode(): Promise<undefined> {
    return undefined;
  }
  upsert(): never {
    throw new Error('oidc-provider bench: unexpected write');
  }
  consume(): never {
    throw new Error('oidc-provider bench: unexpected write');
  }
  destroy(): never {
    throw new Error('oidc-provider bench: unexpected write');
  }
  revokeByGrantId(): never {
    throw new Error('oidc-provider bench: unexpected write');
  }
}

const provider = new Provider(ISSUER, {
  adapter: NoStorage,
  clients: [
    {
      client_id: CLIENT_ID,
      client_secret: CLIENT_SECRET,
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
      token_endpoint_auth_method: 'client_secret_basic',
      scope: SCOPE,
    },
  ],
  // The scopes it knows (a client may only be registered with known ones).
  scopes: ['openid', 'offline_access', SCOPE],
  jwks: { keys: [signingJwk] },
  cookies: { keys: [randomBytes(32).toString('base64url')] },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      // No `resource` parameter in the request: every token is for the one API.
      defaultResource: () => AUDIENCE,
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx: unknown, indicator: string) => {
        if (indicator !== AUDIENCE) throw new errors.InvalidTarget();
        return {
          scope: SCOPE,
          audience: AUDIENCE,
          accessTokenTTL: ACCESS_TOKEN_TTL,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        };
      },
    },
  },
  ttl: { ClientCredentials: ACCESS_TOKEN_TTL },
});

// As in production behind a TLS-terminating proxy: the load generator sends
// `X-Forwarded-Proto: https` (the issuer is https), which Koa trusts with `proxy`.
provider.proxy = true;

serve(createServer(provider.callback()));
