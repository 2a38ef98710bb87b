/**
 * What the servers of the `reference` comparison share: the reference server's public
 * address (its token issuer and audience), its demo principals, the limits that keep its
 * rate limit out of the way, and the variables the orchestrator's setup (`fixture.ts`) hands
 * every server.
 */

/**
 * `BASE_URL` of every reference-server process: the issuer (`iss`) and audience (`aud`) of
 * its access tokens. One fixed address, as several processes of one service share, so a
 * token issued by one verifies in the others (they share the signing key too).
 */
export const BASE_URL = 'https://api.bench.example';
/** The demo client that asks for a `client_credentials` token (the contract's demo data). */
export const CLIENT_ID = 'demo-service';
export const CLIENT_SECRET = 'demo-service-secret';
/** The scope the token is asked for (one of the client's). */
export const SCOPE = 'read:messages';
/** The demo API key's owner and what `/api/me` says of her. */
export const API_KEY_OWNER = {
  sub: 'alice',
  name: 'Alice Example',
  role: 'admin',
  scopes: ['read:messages', 'write:messages'],
} as const;
/**
 * `RATE_LIMIT` (per `RATE_LIMIT_WINDOW`, default 60 s) of the reference server: its default,
 * 100 per minute per API key, user or client, would refuse nearly all of a run; 1e9 counts
 * every request and never triggers. The other stacks get the same limit.
 */
export const RATE_LIMIT = 1_000_000_000;
/** The CORS origins of every stack (the reference server's default `CORS_ORIGINS`). */
export const CORS_ORIGINS = ['http://localhost:5173', 'http://127.0.0.1:5173'];

/** The variables `fixture.ts` returns; every server gets them in its environment. */
export const VARIABLES = {
  /** The RS256 signing key (PKCS#8 PEM) in a file of the run: the reference server's `SIGNING_KEY`. */
  signingKeyFile: 'BENCH_REFERENCE_SIGNING_KEY_FILE',
  /** Its public half (SPKI PEM), for Fastify's `@fastify/jwt`. */
  publicKey: 'BENCH_REFERENCE_PUBLIC_KEY',
  /** The demo API key (`DEMO_API_KEY`), owned by alice; the load generator sends it. */
  apiKey: 'BENCH_REFERENCE_API_KEY',
  /** A well-formed API key that is in no store: must be refused. */
  unknownApiKey: 'BENCH_REFERENCE_UNKNOWN_API_KEY',
  /** The access token the reference server's own `/token` issued to demo-service. */
  token: 'BENCH_REFERENCE_TOKEN',
  /** The same claims and header, signed by another key: must be refused. */
  forgedToken: 'BENCH_REFERENCE_FORGED_TOKEN',
} as const;

/** A variable of the run, or an explanation of how to get one. */
export function variable(name: (typeof VARIABLES)[keyof typeof VARIABLES]): string {
  const value = process.env[name];
  if (value === undefined || value === '') {
    throw new Error(
      `${name} is not set: run this server through \`npm run bench -- reference\` ` +
        '(or set the variables `node --import tsx bench/reference/fixture.ts` prints)',
    );
  }
  return value;
}

/** `GET /api/me` with the demo API key: what the reference server answers (and bare node:http). */
export const API_KEY_BODY = JSON.stringify({ ...API_KEY_OWNER, method: 'api_key' });
/**
 * `GET /api/me` with demo-service's `client_credentials` token: a client acting for itself is
 * named by its id, and its role is `service` (examples/reference-server/account.ts).
 */
export const BEARER_BODY = JSON.stringify({
  sub: CLIENT_ID,
  name: CLIENT_ID,
  role: 'service',
  scopes: [SCOPE],
  method: 'bearer',
});
