// The serialised form of a client kept outside the process (RedisClientStore): JSON of the
// fields of OAuthClient only, each checked when written and again when read, so that a client
// read back is the client written (the same secret hash, keys, redirect URIs, grants, scopes)
// and stored data that is not such a client reads as absent. The secret is only ever stored
// as its scrypt hash (defineClient() hashes it); a field that is not JSON (a function, a URL
// object, a key source) or not a field of OAuthClient is refused with a message naming it.
import { isJwkSetShape, parseHttpUrl } from '../../auth/jwt/jwks-remote.js';
import { assertScopes } from '../../auth/scopes.js';
import type { JwkSet } from '../../core/jwt-types.js';
import { invalidOption } from '../../internal/options.js';
import type { ClientRegistration, GrantType, OAuthClient } from './client.js';

/** Version of the serialised form, so that a later one can tell the formats apart. */
const FORMAT = 1;

/** The fields of OAuthClient, which a stored client holds, and nothing else. */
const FIELDS = [
  'clientId',
  'secretHash',
  'jwks',
  'jwksUri',
  'grantTypes',
  'redirectUris',
  'postLogoutRedirectUris',
  'scopes',
  'defaultScopes',
  'name',
  'introspection',
  'dpopBoundAccessTokens',
  'requirePushedAuthorizationRequests',
  'provenance',
  'registration',
] as const satisfies readonly (keyof OAuthClient)[];

/** What `hashPassword` writes (parameters and base64 salt and key). */
const SCRYPT_HASH =
  /^\$scrypt\$ln=[0-9]{1,2},r=[0-9]{1,2},p=[0-9]{1,2}\$[A-Za-z0-9+/]+\$[A-Za-z0-9+/]+$/;

/** Private key members of a JWK (RFC 7518 §6): a client gives its public keys only. */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];

type Mutable = { -readonly [K in keyof OAuthClient]?: OAuthClient[K] };

function strings(owner: string, name: string, value: unknown): readonly string[] {
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string')) {
    throw invalidOption(`${owner}: \`${name}\` must be an array of strings`);
  }
  return Object.freeze([...value]);
}

function uris(owner: string, name: string, value: unknown): readonly string[] {
  const list = strings(owner, name, value);
  for (const uri of list) {
    if (!URL.canParse(uri) || uri.includes('#')) {
      throw invalidOption(
        `${owner}: \`${name}\` holds \`${uri}\`, not an absolute URI without fragment`,
      );
    }
  }
  return list;
}

/** A JSON copy of a client's public keys, checked as defineClient() checks them. */
function publicKeys(owner: string, value: unknown): JwkSet {
  if (!isJwkSetShape(value) || value.keys.length === 0) {
    throw invalidOption(`${owner}: \`jwks\` must be a JWK Set with at least one key`);
  }
  for (const key of value.keys) {
    if (!['RSA', 'EC', 'OKP'].includes(key.kty as string)) {
      throw invalidOption(`${owner}: \`jwks\` keys must be RSA, EC or OKP public keys`);
    }
    if (PRIVATE_MEMBERS.some((member) => member in key)) {
      throw invalidOption(`${owner}: \`jwks\` must hold public keys only`);
    }
  }
  let copy: unknown;
  try {
    copy = JSON.parse(JSON.stringify(value));
  } catch {
    throw invalidOption(`${owner}: \`jwks\` must be JSON`);
  }
  if (JSON.stringify(copy) !== JSON.stringify(value) || !isJwkSetShape(copy)) {
    throw invalidOption(`${owner}: \`jwks\` must be JSON`);
  }
  return copy as JwkSet;
}

/**
 * A frozen client of the fields of `value` only, each checked: throws a `TypeError` naming
 * the first field that is not what a stored client holds.
 */
function checkedClient(owner: string, value: unknown): OAuthClient {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw invalidOption(`${owner}: a client must be an object (defineClient())`);
  }
  const given = value as Record<string, unknown>;
  for (const key of Object.keys(given)) {
    if ((FIELDS as readonly string[]).includes(key) || given[key] === undefined) continue;
    if (key === 'secret') {
      throw invalidOption(
        `${owner}: a stored client holds the hash of its secret, never the secret: give the client defineClient() made`,
      );
    }
    const what =
      typeof given[key] === 'function'
        ? 'a function, which is not JSON'
        : 'not a field of OAuthClient';
    throw invalidOption(`${owner}: a stored client cannot hold \`${key}\` (${what})`);
  }
  const client: Mutable = {};
  const { clientId } = given;
  if (typeof clientId !== 'string' || !/^[\x21-\x7e]{1,128}$/.test(clientId)) {
    throw invalidOption(`${owner}: \`clientId\` must be 1–128 visible ASCII characters`);
  }
  client.clientId = clientId;
  if (given.secretHash !== undefined) {
    if (typeof given.secretHash !== 'string' || !SCRYPT_HASH.test(given.secretHash)) {
      throw invalidOption(
        `${owner}: \`secretHash\` must be a hash of hashPassword() (defineClient())`,
      );
    }
    client.secretHash = given.secretHash;
  }
  if (given.jwks !== undefined && given.jwksUri !== undefined) {
    throw invalidOption(`${owner}: give \`jwks\` or \`jwksUri\`, not both`);
  }
  if (given.jwks !== undefined) client.jwks = publicKeys(owner, given.jwks);
  if (given.jwksUri !== undefined) {
    if (typeof given.jwksUri !== 'string') {
      throw invalidOption(`${owner}: \`jwksUri\` must be a string (an https: URL)`);
    }
    parseHttpUrl(owner, 'jwksUri', given.jwksUri);
    client.jwksUri = given.jwksUri;
  }
  const confidential =
    client.secretHash !== undefined || client.jwks !== undefined || client.jwksUri !== undefined;
  if (
    client.secretHash !== undefined &&
    (client.jwks !== undefined || client.jwksUri !== undefined)
  ) {
    throw invalidOption(`${owner}: a client authenticates with a secret or with keys, not both`);
  }
  client.grantTypes = strings(owner, 'grantTypes', given.grantTypes) as readonly GrantType[];
  if (!confidential && client.grantTypes.includes('client_credentials')) {
    throw invalidOption(
      `${owner}: client_credentials needs a confidential client (a secret or keys)`,
    );
  }
  client.redirectUris = uris(owner, 'redirectUris', given.redirectUris);
  if (given.postLogoutRedirectUris !== undefined) {
    client.postLogoutRedirectUris = uris(
      owner,
      'postLogoutRedirectUris',
      given.postLogoutRedirectUris,
    );
  }
  client.scopes = strings(owner, 'scopes', given.scopes);
  assertScopes(owner, client.scopes);
  if (given.defaultScopes !== undefined) {
    client.defaultScopes = strings(owner, 'defaultScopes', given.defaultScopes);
    assertScopes(owner, client.defaultScopes);
  }
  if (given.name !== undefined) {
    if (typeof given.name !== 'string') throw invalidOption(`${owner}: \`name\` must be a string`);
    client.name = given.name;
  }
  if (given.introspection !== undefined) {
    if (given.introspection !== 'own' && given.introspection !== 'any') {
      throw invalidOption(`${owner}: \`introspection\` must be 'own' or 'any'`);
    }
    if (given.introspection === 'any' && !confidential) {
      throw invalidOption(`${owner}: \`introspection: 'any'\` needs a confidential client`);
    }
    client.introspection = given.introspection;
  }
  for (const flag of ['dpopBoundAccessTokens', 'requirePushedAuthorizationRequests'] as const) {
    if (given[flag] === undefined) continue;
    if (typeof given[flag] !== 'boolean')
      throw invalidOption(`${owner}: \`${flag}\` must be a boolean`);
    client[flag] = given[flag];
  }
  if (given.provenance !== undefined) {
    if (!['configured', 'registered', 'metadata-document'].includes(given.provenance as string)) {
      throw invalidOption(
        `${owner}: \`provenance\` must be 'configured', 'registered' or 'metadata-document'`,
      );
    }
    client.provenance = given.provenance as OAuthClient['provenance'];
  }
  if (given.registration !== undefined)
    client.registration = registrationOf(owner, given.registration);
  return Object.freeze(client) as OAuthClient;
}

/** The registration record of a client, checked: JSON metadata, a token hash, a time. */
function registrationOf(owner: string, value: unknown): ClientRegistration {
  const given = value as Partial<ClientRegistration> | null;
  const { metadata, accessTokenHash, issuedAt } = given ?? {};
  if (
    typeof metadata !== 'object' ||
    metadata === null ||
    Array.isArray(metadata) ||
    typeof accessTokenHash !== 'string' ||
    !/^[A-Za-z0-9_-]{43}$/.test(accessTokenHash) ||
    typeof issuedAt !== 'number' ||
    !Number.isSafeInteger(issuedAt)
  ) {
    throw invalidOption(
      `${owner}: \`registration\` must hold \`metadata\` (an object), \`accessTokenHash\` and \`issuedAt\``,
    );
  }
  let copy: Record<string, unknown>;
  try {
    copy = JSON.parse(JSON.stringify(metadata)) as Record<string, unknown>;
  } catch {
    throw invalidOption(`${owner}: \`registration.metadata\` must be JSON`);
  }
  if ('client_secret' in copy || 'registration_access_token' in copy) {
    throw invalidOption(`${owner}: \`registration.metadata\` never holds a secret`);
  }
  return Object.freeze({ metadata: Object.freeze(copy), accessTokenHash, issuedAt });
}

/**
 * The JSON stored for `client`, its fields checked: throws a `TypeError` naming a field that
 * a stored client cannot hold (a function, a URL object, a secret in clear, anything that is
 * not a field of {@link OAuthClient}).
 * @internal
 */
export function storedClientJson(
  owner: string,
  client: unknown,
): { clientId: string; json: string } {
  const checked = checkedClient(owner, client);
  return { clientId: checked.clientId, json: JSON.stringify({ v: FORMAT, client: checked }) };
}

/**
 * The client stored as `text` under `clientId`, frozen, or `undefined` when the text is
 * missing or is not such a client (never throws).
 * @internal
 */
export function readStoredClient(text: unknown, clientId: string): OAuthClient | undefined {
  if (typeof text !== 'string') return undefined;
  try {
    const stored = JSON.parse(text) as { v?: unknown; client?: unknown };
    if (stored?.v !== FORMAT) return undefined;
    const client = checkedClient('stored client', stored.client);
    return client.clientId === clientId ? client : undefined;
  } catch {
    return undefined;
  }
}
