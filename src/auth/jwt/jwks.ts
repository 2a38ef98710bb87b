import {
  createPublicKey,
  KeyObject,
  type JsonWebKey as NodeJwk,
  type webcrypto,
} from 'node:crypto';
import type { JWTVerifyGetKey, LocalJWKSet } from 'jose';
import type { JwkSet as JSONWebKeySet, Jwk as JWK } from '../../core/jwt-types.js';
import { loadedJose, loadJose } from '../../internal/lazy.js';
import { invalidOption } from '../../internal/options.js';
import {
  isJwkSetShape,
  type KeySource,
  type RemoteJwksOptions,
  remoteSource,
} from './jwks-remote.js';

export {
  isJwkSetShape,
  type KeySource,
  parseHttpUrl,
  type RemoteJwksOptions,
} from './jwks-remote.js';

/**
 * Where verification keys come from: exactly one of the four sources.
 * @see {@link https://www.rfc-editor.org/rfc/rfc7517#section-5 | RFC 7517 §5} (JWK Set)
 */
export interface KeySourceOptions {
  /**
   * A shared secret of at least 32 bytes (48 for HS384, 64 for HS512): HMAC algorithms only.
   * @defaultValue none (give exactly one of `secret`, `publicKey`, `jwks`, `jwksUrl`)
   */
  secret?: string | Uint8Array;
  /**
   * A public key: SPKI PEM (or an X.509 certificate PEM), a `KeyObject` or a public JWK.
   * @defaultValue none (give exactly one of `secret`, `publicKey`, `jwks`, `jwksUrl`)
   */
  publicKey?: string | KeyObject | JWK;
  /**
   * A local JSON Web Key Set, `{ keys: [...] }`, of public keys (RFC 7517 §5).
   * @defaultValue none (give exactly one of `secret`, `publicKey`, `jwks`, `jwksUrl`)
   */
  jwks?: JSONWebKeySet;
  /**
   * The URL of a remote JWKS (`https:`; `http:` only for tests and local providers).
   * @defaultValue none (give exactly one of `secret`, `publicKey`, `jwks`, `jwksUrl`)
   */
  jwksUrl?: string | URL;
  /** How {@link KeySourceOptions.jwksUrl} is fetched and kept. @defaultValue see its members */
  jwksOptions?: RemoteJwksOptions;
}

const HMAC_MIN_BYTES: Readonly<Record<string, number>> = { HS256: 32, HS384: 48, HS512: 64 };
const rsa = (k: KeyObject) => k.asymmetricKeyType === 'rsa';
const ec = (curve: string) => (k: KeyObject) =>
  k.asymmetricKeyType === 'ec' && k.asymmetricKeyDetails?.namedCurve === curve;
const ed25519 = (k: KeyObject) => k.asymmetricKeyType === 'ed25519';
/** The asymmetric algorithms accepted, each with the keys it fits. */
const ASYMMETRIC: Readonly<Record<string, (key: KeyObject) => boolean>> = {
  RS256: rsa,
  RS384: rsa,
  RS512: rsa,
  PS256: rsa,
  PS384: rsa,
  PS512: rsa,
  ES256: ec('prime256v1'),
  ES384: ec('secp384r1'),
  ES512: ec('secp521r1'),
  EdDSA: ed25519,
  Ed25519: ed25519,
};

function fixed(key: KeySource['key']): KeySource {
  return { key, generation: () => 0, isFresh: () => true };
}

function defaultFor(key: KeyObject): string {
  if (key.asymmetricKeyType === 'ed25519') return 'EdDSA';
  const curve = key.asymmetricKeyDetails?.namedCurve;
  if (key.asymmetricKeyType === 'ec') {
    return curve === 'secp384r1' ? 'ES384' : curve === 'secp521r1' ? 'ES512' : 'ES256';
  }
  return 'RS256';
}

/** Reads `publicKey` as a node `KeyObject`, refusing private and secret keys. */
function toPublicKeyObject(owner: string, input: string | KeyObject | JWK): KeyObject {
  if (input instanceof KeyObject) {
    if (input.type !== 'public')
      throw invalidOption(`${owner}: \`publicKey\` must be a public key`);
    return refuseRsaPss(owner, input);
  }
  if (typeof input === 'string') {
    if (!/^-----BEGIN (?:PUBLIC KEY|CERTIFICATE)-----/m.test(input)) {
      throw invalidOption(`${owner}: \`publicKey\` must be an SPKI or certificate PEM`);
    }
  } else if (typeof input !== 'object' || input === null) {
    throw invalidOption(`${owner}: \`publicKey\` must be a PEM string, a KeyObject or a JWK`);
  } else if (input.kty === 'oct') {
    throw invalidOption(`${owner}: give a shared key as \`secret\`, not \`publicKey\``);
  } else if ('d' in input || 'priv' in input) {
    throw invalidOption(`${owner}: \`publicKey\` must be a public JWK, not a private one`);
  }
  let key: KeyObject;
  try {
    key =
      typeof input === 'string'
        ? createPublicKey(input)
        : createPublicKey({ key: input as NodeJwk, format: 'jwk' });
  } catch {
    throw invalidOption(`${owner}: \`publicKey\` is not a readable public key`);
  }
  return refuseRsaPss(owner, key);
}

/**
 * An `rsa-pss` key (RSASSA-PSS SubjectPublicKeyInfo) cannot be used by jose on Node 20 (it
 * goes through a JWK, which Node refuses for that type): refused when the verifier is built
 * rather than refusing every token after. The same key as plain RSA verifies PS256.
 */
function refuseRsaPss(owner: string, key: KeyObject): KeyObject {
  if (key.asymmetricKeyType !== 'rsa-pss') return key;
  throw invalidOption(
    `${owner}: \`publicKey\` is an RSA-PSS key, which cannot verify here: give it as a plain RSA key (rsaEncryption SPKI, or a JWK), which verifies PS256 too`,
  );
}

/** Checks the algorithm allowlist: known, never `none`, HMAC only with a secret and vice versa. */
export function checkAlgorithms(owner: string, algorithms: unknown, hmac: boolean): string[] {
  if (!Array.isArray(algorithms) || algorithms.length === 0) {
    throw invalidOption(`${owner}: \`algorithms\` must be a non-empty array`);
  }
  for (const alg of algorithms) {
    if (typeof alg === 'string' && alg.toLowerCase() === 'none') {
      throw invalidOption(`${owner}: the algorithm \`none\` is never accepted`);
    }
    const known =
      typeof alg === 'string' &&
      (Object.hasOwn(HMAC_MIN_BYTES, alg) || Object.hasOwn(ASYMMETRIC, alg));
    if (!known) throw invalidOption(`${owner}: unknown algorithm \`${String(alg)}\``);
    if (Object.hasOwn(HMAC_MIN_BYTES, alg) !== hmac) {
      throw invalidOption(
        hmac
          ? `${owner}: with a \`secret\` only HS256, HS384 and HS512 are accepted`
          : `${owner}: HMAC algorithms (HS*) need a \`secret\`, never a public key or JWKS`,
      );
    }
  }
  return [...new Set(algorithms as string[])];
}

/**
 * Builds the key source and the algorithm allowlist, validating both once. Exactly one
 * source must be given; algorithms default to `HS256` for a secret, the algorithm the key
 * implies for a `publicKey` (`RS256` for RSA), `RS256` for a JWKS.
 */
export function resolveKeySource(
  owner: string,
  options: KeySourceOptions,
  algorithms?: readonly string[],
): { source: KeySource; algorithms: string[] } {
  const given = (['secret', 'publicKey', 'jwks', 'jwksUrl'] as const).filter(
    (name) => options[name] !== undefined,
  );
  if (given.length !== 1) {
    throw invalidOption(
      `${owner}: give exactly one of \`secret\`, \`publicKey\`, \`jwks\` or \`jwksUrl\``,
    );
  }
  if (options.jwksOptions !== undefined && options.jwksUrl === undefined) {
    throw invalidOption(`${owner}: \`jwksOptions\` only applies with \`jwksUrl\``);
  }
  if (options.secret !== undefined) {
    const { secret } = options;
    if (typeof secret !== 'string' && !(secret instanceof Uint8Array)) {
      throw invalidOption(`${owner}: \`secret\` must be a string or a Uint8Array`);
    }
    const bytes = typeof secret === 'string' ? new TextEncoder().encode(secret) : secret.slice();
    const algs = checkAlgorithms(owner, algorithms ?? ['HS256'], true);
    for (const alg of algs) {
      if (bytes.byteLength < HMAC_MIN_BYTES[alg]!) {
        throw invalidOption(`${owner}: ${alg} needs a secret of ${HMAC_MIN_BYTES[alg]} bytes`);
      }
    }
    return { source: hmacSource(bytes, algs), algorithms: algs };
  }
  if (options.publicKey !== undefined) {
    const keyObject = toPublicKeyObject(owner, options.publicKey);
    const { publicKey } = options;
    const jwkAlg =
      typeof publicKey === 'object' && !(publicKey instanceof KeyObject)
        ? publicKey.alg
        : undefined;
    const algs = checkAlgorithms(owner, algorithms ?? [jwkAlg ?? defaultFor(keyObject)], false);
    for (const alg of algs) {
      if (!ASYMMETRIC[alg]!(keyObject) || (jwkAlg !== undefined && jwkAlg !== alg)) {
        throw invalidOption(`${owner}: the algorithm ${alg} does not fit \`publicKey\``);
      }
    }
    return { source: fixed(keyObject), algorithms: algs };
  }
  const algs = checkAlgorithms(owner, algorithms ?? ['RS256'], false);
  if (options.jwks !== undefined)
    return { source: localSource(owner, options.jwks), algorithms: algs };
  return { source: remoteSource(owner, options.jwksUrl!, options.jwksOptions), algorithms: algs };
}

/**
 * The secret as a WebCrypto key per algorithm, imported once: jose imports a secret given as
 * bytes again at every verification (its own cache holds KeyObjects only), which costs about
 * as much as the signature check.
 */
function hmacSource(bytes: Uint8Array, algorithms: readonly string[]): KeySource {
  const resolve = hmacKeys(bytes, algorithms);
  if (algorithms.length !== 1) return fixed(resolve);
  // one algorithm: once imported, the CryptoKey itself is handed to jose (no resolver call)
  const [alg] = algorithms as [string];
  let imported: webcrypto.CryptoKey | undefined;
  const first: JWTVerifyGetKey = async (header, token) => {
    const key = (await resolve(header, token)) as webcrypto.CryptoKey;
    if (header.alg === alg) imported = key;
    return key as Awaited<ReturnType<JWTVerifyGetKey>>;
  };
  return {
    get key() {
      return imported ?? first;
    },
    generation: () => 0,
    isFresh: () => true,
  };
}

function hmacKeys(bytes: Uint8Array, algorithms: readonly string[]): JWTVerifyGetKey {
  const imported = new Map<string, Promise<webcrypto.CryptoKey>>();
  return ({ alg }) => {
    // jose checks the header's alg against the allowed algorithms before it asks for a key
    if (alg === undefined || !algorithms.includes(alg)) throw new TypeError('unexpected alg');
    let key = imported.get(alg);
    if (key === undefined) {
      const hash = { name: `SHA-${alg.slice(2)}` };
      key = crypto.subtle.importKey('raw', bytes, { name: 'HMAC', hash }, false, ['verify']);
      imported.set(alg, key);
    }
    return key;
  };
}

function localSource(owner: string, jwks: JSONWebKeySet): KeySource {
  if (!isJwkSetShape(jwks)) throw invalidOption(`${owner}: \`jwks\` must be { keys: [...] }`);
  for (const jwk of jwks.keys) {
    if (jwk.kty === 'oct' || 'd' in jwk || 'priv' in jwk) {
      throw invalidOption(`${owner}: \`jwks\` must hold public keys only`);
    }
  }
  // jose's local set is made on the first verification (jose is loaded then, not at import)
  let local: LocalJWKSet | undefined;
  const key: JWTVerifyGetKey = async (header, token) => {
    local ??= (loadedJose() ?? (await loadJose())).createLocalJWKSet(jwks);
    return local(header, token);
  };
  return fixed(key);
}
