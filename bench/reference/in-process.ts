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
 *   node --import tsx bench/reference/in-process.ts report   all three, one JSON line (the
 *                                                            reference comparison runs it)
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
const ROUNDS = mode === 'alloc' ? 1 : 3;
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

const status = await requestWithoutSocket(app.listener, lines);
if (status !== 200) throw new Error(`GET /api/me answered ${status}`);

/** µs per request of `handler`, each round's, one request after another. */
async function rounds(handler: typeof listener, report: boolean): Promise<number[]> {
  const times: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const start = performance.now();
    for (let i = 0; i < REQUESTS; i++) await requestWithoutSocket(handler, lines);
    times.push(((performance.now() - start) * 1000) / REQUESTS);
    if (!report) console.log(`${times.at(-1)!.toFixed(2)} µs per request`);
  }
  return times;
}

type SampleNode = {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: SampleNode[];
};

/** Bytes allocated per request by `handler`, by function, largest first (one round, sampled). */
async function allocations(handler: typeof listener): Promise<[string, number][]> {
  const session = new Session();
  session.connect();
  await session.post('HeapProfiler.startSampling', {
    samplingInterval: 512,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  } as never);
  for (let i = 0; i < REQUESTS; i++) await requestWithoutSocket(handler, lines);
  const { profile } = (await session.post('HeapProfiler.stopSampling')) as unknown as {
    profile: { head: SampleNode };
  };
  session.disconnect();
  const bySelf = new Map<string, number>();
  const walk = (node: SampleNode) => {
    const { functionName, url, lineNumber } = node.callFrame;
    const where = `${functionName || '(anonymous)'} ${url.replace(/.*\/(src|examples|dist|bench)\//, '$1/')}:${lineNumber}`;
    bySelf.set(where, (bySelf.get(where) ?? 0) + node.selfSize / REQUESTS);
    for (const child of node.children) walk(child);
  };
  walk(profile.head);
  return [...bySelf].sort((a, b) => b[1] - a[1]);
}

const total = (list: [string, number][]) => list.reduce((sum, [, bytes]) => sum + bytes, 0);

if (mode === 'report') {
  const bareUs = await rounds(bare, true);
  const chainUs = await rounds(app.listener, true);
  const bareBytes = total(await allocations(bare));
  const chain = await allocations(app.listener);
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;
  const result = {
    requests: REQUESTS,
    rounds: ROUNDS,
    bareUsPerRequest: median(bareUs),
    chainUsPerRequest: median(chainUs),
    bareBytesPerRequest: bareBytes,
    chainBytesPerRequest: total(chain),
    // the chain's sites: the harness's own (bench/) left out, portico's build named so
    allocations: chain
      .filter(([where]) => !where.includes(' bench/'))
      .slice(0, 12)
      .map(([where, bytes]) => ({
        where: where.replace(/ (dist|src)\/\S+$/, ' (portico)'),
        bytes,
      })),
  };
  console.log(JSON.stringify(result));
} else if (mode === 'alloc') {
  const chain = await allocations(app.listener);
  console.log(`${total(chain).toFixed(0)} bytes allocated per request, by function:`);
  for (const [where, bytes] of chain.slice(0, 30)) {
    console.log(`${bytes.toFixed(0).padStart(7)}  ${where}`);
  }
} else {
  await rounds(listener, false);
}
await app.close();
rmSync(dir, { recursive: true, force: true });
