/**
 * The `auth` comparison's setup, run once in the orchestrator before the servers start: an
 * RS256 key pair whose public half becomes a one-key JWKS, an access token signed with it
 * (15 min), a forged twin of that token, an API key made by portico's `createApiKey`, and
 * a DPoP-bound token with one ES256 proof of its key (and one of another key).
 * Every server gets the results as environment variables (see `shared.ts`), so all of them
 * verify the same token. Run directly, it prints them as `export NAME='value'` lines, for
 * starting a server by hand (to profile it, say).
 */

import { randomUUID } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWTPayload, SignJWT } from 'jose';
import { AUDIENCE, DPOP_URL, ISSUER, KEY_ID, SCOPE, SUBJECT, VARIABLES } from './shared.js';

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

/** An ES256 DPoP proof of `pair` for `GET` {@link DPOP_URL} with `token`'s hash. */
async function dpopProof(pair: KeyPair, token: string, now: number): Promise<string> {
  const { createHash } = await import('node:crypto');
  return new SignJWT({
    jti: randomUUID(),
    htm: 'GET',
    htu: DPOP_URL,
    iat: now,
    ath: createHash('sha256').update(token).digest('base64url'),
  })
    .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk: await exportJWK(pair.publicKey) })
    .sign(pair.privateKey);
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
  const dpopKeys = await generateKeyPair('ES256', { extractable: true });
  const strangerKeys = await generateKeyPair('ES256', { extractable: true });
  const jkt = await calculateJwkThumbprint(await exportJWK(dpopKeys.publicKey));
  const dpopToken = await sign({ ...claims, cnf: { jkt } }, issuerKeys.privateKey, now);
  return {
    [VARIABLES.dpopToken]: dpopToken,
    [VARIABLES.dpopProof]: await dpopProof(dpopKeys, dpopToken, now),
    [VARIABLES.dpopStrangerProof]: await dpopProof(strangerKeys, dpopToken, now),
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
