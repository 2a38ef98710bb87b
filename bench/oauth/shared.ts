/**
 * What the servers of the `oauth` comparison share: one confidential client allowed the
 * `client_credentials` grant, the scope it asks for and the audience of its tokens.
 */

/** The issuer identifier of both servers (a name only: nothing resolves it). */
export const ISSUER = 'https://id.bench.example';
/** The `aud` of the access tokens: oidc-provider's resource indicator, portico's `audience`. */
export const AUDIENCE = 'https://api.bench.example';
export const CLIENT_ID = 'bench';
export const CLIENT_SECRET = 'bench-secret-0123456789';
export const SCOPE = 'read:messages';
/** Access token lifetime, seconds: portico's default, set on oidc-provider's resource server. */
export const ACCESS_TOKEN_TTL = 900;

/** `Authorization: Basic …` for a client id and secret (form-encoded first, RFC 6749 §2.3.1). */
export function basicAuthorization(id: string, secret: string): string {
  const encode = (part: string) => encodeURIComponent(part).replace(/%20/g, '+');
  return `Basic ${Buffer.from(`${encode(id)}:${encode(secret)}`).toString('base64')}`;
}

/** The token request's body, `application/x-www-form-urlencoded`. */
export const TOKEN_REQUEST_BODY = `grant_type=client_credentials&scope=${SCOPE}`;
