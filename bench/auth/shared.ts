/**
 * What the servers of the `auth` comparison share: the claims every one of them checks and
 * the variables the orchestrator's setup (`fixture.ts`) hands them.
 */

export const ISSUER = 'https://id.bench.example/';
export const AUDIENCE = 'https://api.bench.example';
export const SUBJECT = 'bench-user';
export const SCOPE = 'read:me';
export const KEY_ID = 'bench-rs256';

/** The variables `fixture.ts` returns; every server gets them in its environment. */
export const VARIABLES = {
  /** The public key set (`{ keys: [one RS256 JWK] }`), as JSON. */
  jwks: 'BENCH_AUTH_JWKS',
  /** The RS256 access token every bearer server is sent. */
  token: 'BENCH_AUTH_TOKEN',
  /** The same claims and `kid`, signed by another key: must be refused. */
  forgedToken: 'BENCH_AUTH_FORGED_TOKEN',
  /** The API key's stored record (from `createApiKey`), as JSON: the hash, never the key. */
  apiKeyRecord: 'BENCH_AUTH_API_KEY_RECORD',
  /** The API key itself, sent by the load generator. */
  apiKey: 'BENCH_AUTH_API_KEY',
  /** A well-formed API key that is in no store: must be refused. */
  unknownApiKey: 'BENCH_AUTH_UNKNOWN_API_KEY',
  /** An RS256 access token bound to the DPoP key (`cnf.jkt`). */
  dpopToken: 'BENCH_AUTH_DPOP_TOKEN',
  /** An ES256 DPoP proof of that key for `GET` {@link DPOP_URL}, with the token's `ath`. */
  dpopProof: 'BENCH_AUTH_DPOP_PROOF',
  /** A proof of another key, for the same request and token: must be refused. */
  dpopStrangerProof: 'BENCH_AUTH_DPOP_STRANGER_PROOF',
} as const;

/** The API's origin as the DPoP server is configured, and the URL its proofs name. */
export const DPOP_ORIGIN = 'https://api.bench.example';
export const DPOP_URL = `${DPOP_ORIGIN}/api/me`;
/** How long the DPoP server takes a proof: longer than any run, as the one proof is resent. */
export const DPOP_MAX_AGE_MS = 30 * 60_000;

/** A variable of the run, or an explanation of how to get one. */
export function variable(name: (typeof VARIABLES)[keyof typeof VARIABLES]): string {
  const value = process.env[name];
  if (value === undefined || value === '') {
    throw new Error(
      `${name} is not set: run this server through \`npm run bench -- auth\` ` +
        '(or set the variables `node --import tsx bench/auth/fixture.ts` prints)',
    );
  }
  return value;
}

/** The body the bearer servers (and bare node:http) answer. */
export const BEARER_BODY = JSON.stringify({ sub: SUBJECT, method: 'bearer' });
/** The body the DPoP server answers (its principal's `method` is `dpop`). */
export const DPOP_BODY = JSON.stringify({ sub: SUBJECT, method: 'dpop' });
/** The body the API-key server answers (its principal's `method` is `api_key`). */
export const API_KEY_BODY = JSON.stringify({ sub: SUBJECT, method: 'api_key' });
