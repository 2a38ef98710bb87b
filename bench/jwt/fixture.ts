/**
 * The `jwt` comparison's inputs, made once in the orchestrator: per algorithm, a key (an
 * RSA-2048 or P-256 pair, or a 32-byte HMAC secret), N tokens signed with it (the same claims
 * but `sub`), and two tokens every verifier must refuse: the first token's claims signed by
 * another key, and a token of the right key for another audience. Every verifier process of
 * an algorithm is sent the same inputs over IPC.
 */
import { randomBytes } from 'node:crypto';
import { exportSPKI, generateKeyPair, importSPKI, type JWTPayload, SignJWT } from 'jose';

export const ISSUER = 'https://id.bench.example/';
export const AUDIENCE = 'https://api.bench.example';
export const ALGORITHMS = ['RS256', 'ES256', 'HS256'] as const;
export type Algorithm = (typeof ALGORITHMS)[number];
/** Distinct tokens of the round-robin workload (fast-jwt's default cache holds 1,000). */
export const TOKENS = 1000;
/** Longer than any run, short enough to be useless once it ends. */
const LIFETIME_SECONDS = 15 * 60;
/** Signatures made at a time (the threadpool signs RS256 in parallel). */
const SIGN_BATCH = 64;

export const subjectOf = (i: number) => `bench-user-${i}`;

/** What each verifier process of one algorithm is sent. */
export interface AlgorithmInputs {
  alg: Algorithm;
  /** The public key (SPKI PEM) for RS256 and ES256. */
  publicKeyPem?: string;
  /** The shared secret for HS256 (43 base64url characters, used as their UTF-8 bytes). */
  secret?: string;
  /** `tokens[i]` has `sub` {@link subjectOf}(i); `tokens[0]` is the "same token" one. */
  tokens: string[];
  /** `tokens[0]`'s claims and header signed by another key of the same kind. */
  forged: string;
  /** Signed by the right key, for another audience. */
  wrongAudience: string;
}

type SigningKey = Parameters<SignJWT['sign']>[0];

/**
 * The algorithm's verification key imported once as a `CryptoKey`: `jwtVerify` then imports
 * nothing per call (given a secret's bytes, it imports them into WebCrypto every time).
 */
export function importedVerificationKey({ alg, publicKeyPem, secret }: AlgorithmInputs) {
  return secret === undefined
    ? importSPKI(publicKeyPem!, alg)
    : crypto.subtle.importKey(
        'raw',
        new TextEncoder().encode(secret),
        { name: 'HMAC', hash: 'SHA-256' },
        false,
        ['verify'],
      );
}

async function keysOf(
  alg: Algorithm,
): Promise<{ sign: SigningKey; other: SigningKey; pem?: string; secret?: string }> {
  if (alg === 'HS256') {
    const secret = randomBytes(32).toString('base64url');
    const other = randomBytes(32).toString('base64url');
    return {
      sign: new TextEncoder().encode(secret),
      other: new TextEncoder().encode(other),
      secret,
    };
  }
  const options = alg === 'RS256' ? { modulusLength: 2048, extractable: true } : {};
  const pair = await generateKeyPair(alg, { ...options, extractable: true });
  const forger = await generateKeyPair(alg, options);
  return { sign: pair.privateKey, other: forger.privateKey, pem: await exportSPKI(pair.publicKey) };
}

function signer(alg: Algorithm, now: number) {
  return (claims: JWTPayload, key: SigningKey, audience = AUDIENCE) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg, typ: 'JWT' })
      .setIssuer(ISSUER)
      .setAudience(audience)
      .setIssuedAt(now)
      .setExpirationTime(now + LIFETIME_SECONDS)
      .sign(key);
}

async function inputsOf(alg: Algorithm, now: number): Promise<AlgorithmInputs> {
  const keys = await keysOf(alg);
  const sign = signer(alg, now);
  const tokens: string[] = [];
  for (let start = 0; start < TOKENS; start += SIGN_BATCH) {
    const batch = Array.from({ length: Math.min(SIGN_BATCH, TOKENS - start) }, (_, i) =>
      sign({ sub: subjectOf(start + i) }, keys.sign),
    );
    tokens.push(...(await Promise.all(batch)));
  }
  return {
    alg,
    ...(keys.pem !== undefined && { publicKeyPem: keys.pem }),
    ...(keys.secret !== undefined && { secret: keys.secret }),
    tokens,
    forged: await sign({ sub: subjectOf(0) }, keys.other),
    wrongAudience: await sign({ sub: subjectOf(0) }, keys.sign, 'https://other.bench.example'),
  };
}

/** Per algorithm, its inputs. */
export async function jwtFixture(): Promise<Record<Algorithm, AlgorithmInputs>> {
  const now = Math.floor(Date.now() / 1000);
  const [rs, es, hs] = await Promise.all(ALGORITHMS.map((alg) => inputsOf(alg, now)));
  return { RS256: rs!, ES256: es!, HS256: hs! };
}
