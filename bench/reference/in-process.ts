/**
 * The reference server's request path in this process, without sockets: its own `createApp`
 * (production mode behind a TLS proxy, in-memory stores, as the `reference` comparison runs
 * it) called with node's own IncomingMessage and ServerResponse for `GET /api/me` with the
 * demo API key, one request after another. Not part of `npm run bench`: a tool for working on
 * the request path, where the kernel's share of a loaded server hides small changes. Under
 * plain tsx, `portico` is its sources (tsconfig.json's `paths`); to measure the build, as the
 * bench servers do, run `npm run build` and add `TSX_TSCONFIG_PATH=bench/tsconfig.dist.json`.
 * What each piece of the chain costs: bench/reference/chain-costs.ts.
 *
 *   node --import tsx bench/reference/in-process.ts          µs per request (3 rounds)
 *   node --import tsx bench/reference/in-process.ts bare     the same harness, a bare handler
 *   node --import tsx bench/reference/in-process.ts alloc    bytes allocated per request, by function
 *   node --cpu-prof --import tsx bench/reference/in-process.ts   a CPU profile of the rounds
 *
 * With `CREDENTIAL=bearer`, each request carries an access token the app's own `POST /token`
 * issued to `demo-service` (client_credentials) instead of the API key: the verified-token
 * cache's path.
 */

import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { Session } from 'node:inspector/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createApp } from '../../examples/reference-server/app.js';
import { loadConfig } from '../../examples/reference-server/config.js';
import { requestWithoutSocket } from './socketless.js';

const mode = process.argv[2] ?? 'time';
const ROUNDS = mode === 'time' || mode === 'bare' ? 3 : 1;
const REQUESTS = 50_000;
const KEY = 'demo-bench-key-0123456789abcdef0123';
const BASE = 'https://api.example.com';

const dir = mkdtempSync(join(tmpdir(), 'portico-in-process-'));
const keyFile = join(dir, 'signing.pem');
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
writeFileSync(keyFile, privateKey.export({ type: 'pkcs8', format: 'pem' }));
const config = loadConfig({
  ...process.env,
  NODE_ENV: 'production',
  TRUST_PROXY: '1',
  BASE_URL: BASE,
  REDIS_URL: '',
  SIGNING_KEY: keyFile,
  DEMO_API_KEY: KEY,
  RATE_LIMIT: '1000000000',
  LOG_LEVEL: 'silent',
  PORT: '0',
});
const app = await createApp(config, { baseUrl: BASE });

const body =
  '{"sub":"alice","name":"Alice Example","role":"admin","scopes":["read:messages","write:messages"],"method":"api_key"}';
const bare = (_req: IncomingMessage, res: ServerResponse) => {
  res.writeHead(200, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
};
const listener = mode === 'bare' ? bare : app.listener;

/** An access token from the app's own `POST /token` (client_credentials, demo-service). */
async function bearerToken(): Promise<string> {
  const server = createServer(app.listener).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  const res = await fetch(`http://127.0.0.1:${port}/token`, {
    method: 'POST',
    headers: {
      host: 'api.example.com',
      'x-forwarded-proto': 'https',
      authorization: `Basic ${Buffer.from('demo-service:demo-service-secret').toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: 'grant_type=client_credentials&scope=read%3Amessages',
  });
  const { access_token: token } = (await res.json()) as { access_token: string };
  server.close();
  return token;
}
const credential =
  process.env.CREDENTIAL === 'bearer'
    ? ['Authorization', `Bearer ${await bearerToken()}`]
    : ['X-API-Key', KEY];
const lines = [
  ...['Host', 'api.example.com', ...credential, 'X-Forwarded-Proto', 'https'],
  ...['X-Forwarded-For', '203.0.113.7', 'User-Agent', 'bench', 'Accept', '*/*'],
];

const status = await requestWithoutSocket(listener, lines);
if (status !== 200) throw new Error(`GET /api/me answered ${status}`);

type SampleNode = {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: SampleNode[];
};
const session = new Session();
if (mode === 'alloc') {
  session.connect();
  await session.post('HeapProfiler.startSampling', {
    samplingInterval: 512,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  } as never);
}
for (let round = 0; round < ROUNDS; round++) {
  const start = performance.now();
  for (let i = 0; i < REQUESTS; i++) await requestWithoutSocket(listener, lines);
  console.log(`${(((performance.now() - start) * 1000) / REQUESTS).toFixed(2)} µs per request`);
}
if (mode === 'alloc') {
  const { profile } = (await session.post('HeapProfiler.stopSampling')) as unknown as {
    profile: { head: SampleNode };
  };
  const bySelf = new Map<string, number>();
  const walk = (node: SampleNode) => {
    const { functionName, url, lineNumber } = node.callFrame;
    const where = `${functionName || '(anonymous)'} ${url.replace(/.*\/(src|examples)\//, '$1/')}:${lineNumber}`;
    bySelf.set(where, (bySelf.get(where) ?? 0) + node.selfSize);
    for (const child of node.children) walk(child);
  };
  walk(profile.head);
  const total = [...bySelf.values()].reduce((a, b) => a + b, 0);
  console.log(`${(total / REQUESTS).toFixed(0)} bytes allocated per request, by function:`);
  for (const [where, bytes] of [...bySelf].sort((a, b) => b[1] - a[1]).slice(0, 30)) {
    console.log(`${(bytes / REQUESTS).toFixed(0).padStart(7)}  ${where}`);
  }
}
await app.close();
rmSync(dir, { recursive: true, force: true });
