/**
 * The floor under both token servers: how many RS256 signatures (2048-bit key) and access
 * tokens this machine makes per second in one process, without HTTP. Each row runs for a
 * bounded time, sequentially (one at a time) or with 32 in flight (the threadpool signs in
 * parallel, as under load), and gives tokens/s and the process's CPU time per token (all
 * threads). Run: `npm run build && node --import tsx bench/oauth/sign-floor.ts [seconds]`.
 */

import { generateKeyPairSync, sign as nodeSign } from 'node:crypto';
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { SignJWT } from 'jose';
import { AUDIENCE, CLIENT_ID, CLIENT_SECRET, ISSUER, SCOPE } from './shared.js';

const seconds = Math.min(Math.max(Number(process.argv[2] ?? 3) || 3, 1), 30);
const IN_FLIGHT = 32;

const dist = new URL('../../dist/index.js', import.meta.url).href;
const portico = (await import(dist)) as typeof import('../../src/index.js');
const oauthDist = new URL('../../dist/oauth.js', import.meta.url).href;
const { clientCredentialsGrant } = (await import(
  oauthDist
)) as typeof import('../../src/oauth/index.js');
// oidc-provider 8 signs with its own jose (5.x): the same path, from its dependency.
const require = createRequire(import.meta.resolve('oidc-provider'));
const jose5 = (await import(pathToFileURL(require.resolve('jose')).href)) as typeof import('jose');

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const signAsync = promisify(nodeSign);
const cryptoKey = await crypto.subtle.importKey(
  'jwk',
  privateKey.export({ format: 'jwk' }),
  { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' },
  false,
  ['sign'],
);
const now = Math.floor(Date.now() / 1000);
const claims = {
  sub: CLIENT_ID,
  aud: AUDIENCE,
  jti: '9c2b2a3e-64d2-4d5e-a2a5-3c4f0e1c2b6d',
  client_id: CLIENT_ID,
  scope: SCOPE,
  iss: ISSUER,
  iat: now,
  exp: now + 900,
};
const header = { alg: 'RS256', kid: 'bench-rs256', typ: 'at+jwt' };
const signingInput = Buffer.from(
  `${Buffer.from(JSON.stringify(header)).toString('base64url')}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`,
);

const keys = await portico.createKeySet();
const server = portico.createAuthorizationServer({
  issuer: ISSUER,
  resources: [{ identifier: AUDIENCE }],
  clients: new portico.MemoryClientStore([
    await portico.defineClient({
      clientId: CLIENT_ID,
      secret: CLIENT_SECRET,
      grantTypes: ['client_credentials'],
      redirectUris: [],
      scopes: [SCOPE],
    }),
  ]),
  keys,
  users: { verify: () => undefined, get: () => undefined },
  sessions: portico.createSessions({ allowedOrigins: [new URL(ISSUER).origin] }),
});
const client = await server.context.clients.get(CLIENT_ID);
if (client === undefined) throw new Error('no client');
const params = new Map([
  ['grant_type', 'client_credentials'],
  ['scope', SCOPE],
]);

/**
 * Runs `once` for `seconds` with `inFlight` calls at a time: calls per second, the process's
 * CPU µs per call (every thread) and the main thread's busy µs per call.
 */
async function measure(
  inFlight: number,
  once: () => unknown,
): Promise<{ perSecond: number; cpuUs: number; mainUs: number }> {
  const end = performance.now() + seconds * 1000;
  let done = 0;
  const cpu = process.cpuUsage();
  const elu = performance.eventLoopUtilization();
  const start = performance.now();
  const worker = async () => {
    while (performance.now() < end) {
      await once();
      done++;
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  const elapsed = (performance.now() - start) / 1000;
  const used = process.cpuUsage(cpu);
  const busy = performance.eventLoopUtilization(elu);
  return {
    perSecond: done / elapsed,
    cpuUs: (used.user + used.system) / done,
    mainUs: (busy.active * 1000) / done,
  };
}

const rows: [string, number, () => unknown][] = [
  [
    'node:crypto sign (RSA-SHA256, sync), one core',
    1,
    () => nodeSign('sha256', signingInput, privateKey),
  ],
  [
    `node:crypto sign with a callback (threadpool), ${IN_FLIGHT} in flight`,
    IN_FLIGHT,
    () => signAsync('sha256', signingInput, privateKey),
  ],
  [
    `crypto.subtle.sign RSASSA-PKCS1-v1_5 (threadpool), ${IN_FLIGHT} in flight`,
    IN_FLIGHT,
    () => crypto.subtle.sign('RSASSA-PKCS1-v1_5', cryptoKey, signingInput),
  ],
  [
    'jose 6 SignJWT RS256 (portico), sequential',
    1,
    () => new SignJWT(claims).setProtectedHeader(header).sign(privateKey),
  ],
  [
    `jose 6 SignJWT RS256 (portico), ${IN_FLIGHT} in flight`,
    IN_FLIGHT,
    () => new SignJWT(claims).setProtectedHeader(header).sign(privateKey),
  ],
  [
    `jose 5 CompactSign RS256 (oidc-provider 8), ${IN_FLIGHT} in flight`,
    IN_FLIGHT,
    () =>
      new jose5.CompactSign(Buffer.from(JSON.stringify(claims)))
        .setProtectedHeader(header)
        .sign(privateKey),
  ],
  [
    `portico tokens.accessToken(), ${IN_FLIGHT} in flight`,
    IN_FLIGHT,
    () =>
      server.context.tokens.accessToken({ sub: CLIENT_ID, clientId: CLIENT_ID, scope: [SCOPE] }),
  ],
  [
    `portico clientCredentialsGrant.handle(), ${IN_FLIGHT} in flight`,
    IN_FLIGHT,
    () => clientCredentialsGrant.handle(server.context, client, params, {}),
  ],
];

process.stdout.write(
  `| In-process, ${seconds} s each | signatures or tokens/s | CPU µs each (all threads) | main thread µs each |\n| --- | ---: | ---: | ---: |\n`,
);
for (const [label, inFlight, once] of rows) {
  await measure(inFlight, once); // warm-up, discarded
  const { perSecond, cpuUs, mainUs } = await measure(inFlight, once);
  process.stdout.write(
    `| ${label} | ${Math.round(perSecond).toLocaleString('en-US')} | ${cpuUs.toFixed(0)} | ${mainUs.toFixed(0)} |\n`,
  );
}
