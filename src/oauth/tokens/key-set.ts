import {
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
} from 'node:crypto';
import type { Duration } from '../../core/duration.js';
import type { Jwk as JWK } from '../../core/jwt-types.js';
import { loadedJose, loadJose } from '../../internal/lazy.js';
import { assertKnownOptions, durationOption, invalidOption } from '../../internal/options.js';

/**
 * Algorithms a {@link KeySet} signs with.
 *
 * @see {@link https://www.rfc-editor.org/rfc/rfc7518#section-3.1 | RFC 7518 §3.1}
 */
export type SigningAlgorithm = 'RS256' | 'ES256' | 'EdDSA';

/** One signing key of a {@link KeySet}. */
export interface SigningKey {
  /** Key id: the key's JWK thumbprint (RFC 7638). */
  readonly kid: string;
  readonly alg: SigningAlgorithm;
  readonly privateKey: KeyObject;
  /** The public half as published: with `kid`, `use: "sig"` and `alg`. */
  readonly publicJwk: Readonly<JWK>;
  /** Epoch ms from which it signs (until a newer key activates). */
  readonly activatesAt: number;
}

/** Options of {@link createKeySet}. */
export interface KeySetOptions {
  /**
   * Algorithm of the keys it makes, and of loaded keys.
   * @defaultValue `'RS256'`
   */
  algorithm?: SigningAlgorithm;
  /**
   * Private keys to load (PEM strings or `KeyObject`s), oldest first; the last one signs.
   * None: a new key is made.
   * @defaultValue none
   */
  keys?: readonly (string | KeyObject)[];
  /**
   * How long a key made by {@link KeySet.rotate} is published before it signs, so that
   * verifiers that cache the JWKS have fetched it by then, in milliseconds.
   * @defaultValue `300_000` (5 minutes)
   */
  publishAheadMs?: Duration;
  /**
   * How long a key stays published after a newer one took over, so that tokens it signed
   * still verify: at least the longest token lifetime, in milliseconds.
   * @defaultValue `3_600_000` (1 hour)
   */
  retainMs?: Duration;
  /** The clock, epoch ms. @defaultValue `Date.now` */
  now?: () => number;
}

const KEY_SET_OPTIONS = [
  'algorithm',
  'keys',
  'publishAheadMs',
  'retainMs',
  'now',
] as const satisfies readonly (keyof KeySetOptions)[];

/**
 * The authorization server's signing keys: the newest active key signs; every key that may
 * still verify a live token is published. {@link KeySet.rotate} adds a key without a restart.
 *
 * @see {@link https://www.rfc-editor.org/rfc/rfc7517 | RFC 7517}
 */
export interface KeySet {
  /** The key to sign with now. */
  signingKey(): SigningKey;
  /** The published keys, as `/.well-known/jwks.json` serves them. */
  jwks(): { keys: JWK[] };
  /**
   * Adds a new key: published at once, signing after `publishAheadMs` (or at once with
   * `immediately`), the old one published for `retainMs` more.
   */
  rotate(options?: { immediately?: boolean }): Promise<SigningKey>;
}

const KEY_TYPE: Record<SigningAlgorithm, () => KeyObject> = {
  RS256: () => generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey,
  ES256: () => generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey,
  EdDSA: () => generateKeyPairSync('ed25519').privateKey,
};

function matchesAlgorithm(key: KeyObject, alg: SigningAlgorithm): boolean {
  const type = key.asymmetricKeyType;
  if (alg === 'RS256')
    return type === 'rsa' && (key.asymmetricKeyDetails?.modulusLength ?? 0) >= 2048;
  if (alg === 'ES256')
    return type === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1';
  return type === 'ed25519';
}

async function describe(
  privateKey: KeyObject,
  alg: SigningAlgorithm,
  activatesAt: number,
): Promise<SigningKey> {
  const { calculateJwkThumbprint, exportJWK } = loadedJose() ?? (await loadJose());
  const jwk = await exportJWK(createPublicKey(privateKey));
  const kid = await calculateJwkThumbprint(jwk);
  return Object.freeze({
    kid,
    alg,
    privateKey,
    publicJwk: Object.freeze({ ...jwk, kid, use: 'sig', alg }),
    activatesAt,
  });
}

/**
 * Creates the signing key set of an authorization server, from loaded keys or a new one.
 *
 * @example
 * ```ts
 * const keys = await createKeySet({ keys: [readFileSync('signing.pem', 'utf8')] });
 * keys.jwks(); // { keys: [{ kty: 'RSA', kid, use: 'sig', alg: 'RS256', n, e }] }
 * await keys.rotate(); // published now, signs in 5 minutes
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc7517 | RFC 7517} (JWK), {@link https://www.rfc-editor.org/rfc/rfc7638 | RFC 7638} (kid)
 */
export async function createKeySet(options: KeySetOptions = {}): Promise<KeySet> {
  assertKnownOptions('createKeySet()', options, KEY_SET_OPTIONS);
  const alg = options.algorithm ?? 'RS256';
  if (!(alg in KEY_TYPE))
    throw invalidOption(`createKeySet(): unsupported algorithm \`${String(alg)}\``);
  const now = options.now ?? Date.now;
  const owner = 'createKeySet()';
  const publishAheadMs = durationOption(owner, 'publishAheadMs', options.publishAheadMs, 300_000);
  const retainMs = durationOption(owner, 'retainMs', options.retainMs, 3_600_000);
  const start = now();
  const loaded = (options.keys ?? []).map((key) =>
    typeof key === 'string' ? createPrivateKey(key) : key,
  );
  for (const key of loaded) {
    if (key.type !== 'private' || !matchesAlgorithm(key, alg)) {
      throw invalidOption(`createKeySet(): every key must be a private ${alg} key`);
    }
  }
  if (loaded.length === 0) loaded.push(KEY_TYPE[alg]());
  // Loaded keys: the last signs; the others published as if just replaced.
  const keys: SigningKey[] = [];
  for (const [i, key] of loaded.entries())
    keys.push(await describe(key, alg, start - (loaded.length - 1 - i)));

  const active = (t: number) => {
    let current = keys[0]!;
    for (const key of keys) if (key.activatesAt <= t) current = key;
    return current;
  };

  /** The published set, the same between two instants where it changes (read per request). */
  let published: { from: number; until: number; value: { keys: JWK[] } } | undefined;
  const keySet: KeySet = {
    signingKey: () => active(now()),
    jwks() {
      const t = now();
      if (published !== undefined && t >= published.from && t < published.until) {
        return published.value;
      }
      published = publishedAt(keys, t, retainMs);
      return published.value;
    },
    async rotate(rotation = {}) {
      const t = now();
      const key = await describe(
        KEY_TYPE[alg](),
        alg,
        rotation.immediately ? t : t + publishAheadMs,
      );
      keys.push(key);
      published = undefined;
      // forget keys no longer published
      const keep = new Set(keySet.jwks().keys.map((k) => k.kid));
      for (let i = keys.length - 1; i >= 0; i--) if (!keep.has(keys[i]!.kid)) keys.splice(i, 1);
      published = undefined;
      return key;
    },
  };
  return keySet;
}

/**
 * The keys published at `t` (frozen), from when to when that set holds: a key stays while it
 * signs, and for `retainMs` after a successor took over; the set changes only when a key
 * activates or a retired one goes.
 */
function publishedAt(
  keys: readonly SigningKey[],
  t: number,
  retainMs: number,
): { from: number; until: number; value: { keys: JWK[] } } {
  const list: JWK[] = [];
  for (const [i, key] of keys.entries()) {
    const successor = keys.slice(i + 1).find((k) => k.activatesAt <= t);
    if (successor === undefined || successor.activatesAt + retainMs > t) {
      list.push(Object.freeze({ ...key.publicJwk }));
    }
  }
  let from = Number.NEGATIVE_INFINITY;
  let until = Number.POSITIVE_INFINITY;
  for (const key of keys) {
    for (const edge of [key.activatesAt, key.activatesAt + retainMs]) {
      if (edge <= t) from = Math.max(from, edge);
      else until = Math.min(until, edge);
    }
  }
  return { from, until, value: Object.freeze({ keys: Object.freeze(list) as JWK[] }) };
}
