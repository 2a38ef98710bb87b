/**
 * The `auth` comparison's setup, run once in the orchestrator before the servers start: an
 * RS256 key pair whose public half becomes a one-key JWKS, an access token signed with it
 * (15 min), a forged twin of that token, and an API key made by portico's `createApiKey`.
 * Every server gets the results as environment variables (see `shared.ts`), so all of them
 * verify the same token. Run directly, it prints them as `export NAME='value'` lines, for
 * starting a server by hand (to profile it, say).
 */
import { pathToFileURL } from 'node:url';
import { exportJWK, generateKeyPair, type JWTPayload, SignJWT } from 'jose';
import { AUDIENCE, ISSUER, KEY_ID, SCOPE, SUBJECT, VARIABLES } from './shared.js';

/** Longer than any default run (about 3 min), short enough to be useless once it ends. */
const LIFETIME_SECONDS = 15 * 60;

type KeyPair = Awaited<ReturnType<typeof generateKeyPair>>;

function rs256Pair(): Promise<KeyPair> {
  return generateKeyPair('RS256', { modulusLength: 2048, extractable: true });
}

async function sign(
  payload: JWTPayload,
  privateKey: KeyPair['privateKey'],
  now: number,
): Promise<string> {
  return new SignJWT(payload)
    .setProtectedHeader({ alg: 'RS256', kid: KEY_ID, typ: 'at+jwt' })
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setSubject(SUBJECT)
    .setIssuedAt(now)
    .setExpirationTime(now + LIFETIME_SECONDS)
    .sign(privateKey);
}

export async function authFixture(): Promise<Record<string, string>> {
  // portico's build, as the servers load it (`npm run bench` builds it before any setup).
  const dist = new URL('../../dist/auth.js', import.meta.url).href;
  const { createApiKey, generateApiKey, MemoryApiKeyStore } = (await import(
    dist
  )) as typeof import('../../src/auth/index.js');

  const now = Math.floor(Date.now() / 1000);
  const issuerKeys = await rs256Pair();
  const forgerKeys = await rs256Pair();
  const jwk = await exportJWK(issuerKeys.publicKey);
  const jwks = { keys: [{ ...jwk, kid: KEY_ID, alg: 'RS256', use: 'sig' }] };
  const claims = { scope: SCOPE };
  const { key, record } = await createApiKey(new MemoryApiKeyStore(), {
    owner: SUBJECT,
    name: 'bench',
  });
  return {
    [VARIABLES.jwks]: JSON.stringify(jwks),
    [VARIABLES.token]: await sign(claims, issuerKeys.privateKey, now),
    [VARIABLES.forgedToken]: await sign(claims, forgerKeys.privateKey, now),
    [VARIABLES.apiKeyRecord]: JSON.stringify(record),
    [VARIABLES.apiKey]: key,
    [VARIABLES.unknownApiKey]: generateApiKey(),
  };
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const variables = await authFixture();
  for (const [name, value] of Object.entries(variables)) {
    process.stdout.write(`export ${name}='${value.replace(/'/g, `'\\''`)}'\n`);
  }
}
