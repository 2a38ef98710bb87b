/**
 * The `reference` comparison's setup, run once in the orchestrator before the servers start:
 * an RS256 signing key (PKCS#8 PEM, in a file of the run: the reference server's
 * `SIGNING_KEY`), the demo API key (`DEMO_API_KEY`, made by portico's `generateApiKey`), and
 * an access token issued by the reference server itself: `npm start`'s entry
 * (examples/reference-server/main.ts) is started once with that key and `BASE_URL`, asked
 * `POST /token` with `client_credentials` for the demo client `demo-service`, and stopped.
 * Every reference-server process of the run shares the key and `BASE_URL` (as processes of
 * one service do), so each verifies that token. Run directly, it prints the variables as
 * `export NAME='value'` lines, for starting a server by hand (the key file then stays).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { generateKeyPairSync, sign } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from '../lib/paths.js';
import { BASE_URL, CLIENT_ID, CLIENT_SECRET, RATE_LIMIT, SCOPE, VARIABLES } from './shared.js';

const START_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 10_000;

/** The directory holding this run's signing key, removed by {@link referenceTeardown}. */
let keyDir: string | undefined;

function exited(child: ChildProcess, ms: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

/**
 * Starts the reference server as `npm start` does (`PORT=0`), resolves with the URL of its
 * ready line (`… listening on <URL>`) and the process.
 */
function startReferenceServer(
  env: Record<string, string>,
): Promise<{ url: string; child: ChildProcess }> {
  const { NODE_ENV: _ignored, ...inherited } = process.env;
  const child = spawn(process.execPath, ['--import', 'tsx', 'examples/reference-server/main.ts'], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...inherited, ...env },
  });
  return new Promise((resolve, reject) => {
    let output = '';
    const fail = (why: string) => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(new Error(`reference server (token issuer): ${why}\n${output.slice(-2000)}`));
    };
    const timer = setTimeout(
      () => fail(`not ready within ${START_TIMEOUT_MS} ms`),
      START_TIMEOUT_MS,
    );
    child.once('error', (err) => fail(err.message));
    child.once('exit', (code, signal) => fail(`exited early (code ${code}, signal ${signal})`));
    child.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const ready = /listening on (\S+)/.exec(output);
      if (ready === null) return;
      clearTimeout(timer);
      child.removeAllListeners('exit');
      child.stdout?.removeAllListeners('data');
      child.stdout?.resume();
      resolve({ url: ready[1]!, child });
    });
  });
}

/** `POST /token`, `client_credentials`, `client_secret_basic`: the access token. */
async function clientCredentialsToken(url: string): Promise<string> {
  const res = await fetch(`${url}/token`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: `grant_type=client_credentials&scope=${encodeURIComponent(SCOPE)}`,
    signal: AbortSignal.timeout(10_000),
  });
  const body = (await res.json()) as { access_token?: unknown };
  if (res.status !== 200 || typeof body.access_token !== 'string') {
    throw new Error(`POST /token: status ${res.status}, ${JSON.stringify(body)}`);
  }
  return body.access_token;
}

export async function referenceFixture(): Promise<Record<string, string>> {
  // portico's build, as the servers load it (`npm run bench` builds it before any setup).
  const dist = new URL('../../dist/auth.js', import.meta.url).href;
  const { generateApiKey } = (await import(dist)) as typeof import('../../src/auth/index.js');

  const issuer = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const forger = generateKeyPairSync('rsa', { modulusLength: 2048 });
  keyDir = mkdtempSync(join(tmpdir(), 'portico-bench-reference-'));
  const signingKeyFile = join(keyDir, 'signing-key.pem');
  writeFileSync(signingKeyFile, issuer.privateKey.export({ type: 'pkcs8', format: 'pem' }), {
    mode: 0o600,
  });
  const apiKey = generateApiKey();

  const { url, child } = await startReferenceServer({
    PORT: '0',
    HOST: '127.0.0.1',
    BASE_URL,
    SIGNING_KEY: signingKeyFile,
    DEMO_API_KEY: apiKey,
    RATE_LIMIT: String(RATE_LIMIT),
    REDIS_URL: '',
  });
  let token: string;
  try {
    token = await clientCredentialsToken(url);
  } finally {
    child.kill('SIGTERM');
    if (!(await exited(child, STOP_TIMEOUT_MS))) {
      child.kill('SIGKILL');
      await exited(child, STOP_TIMEOUT_MS);
    }
  }
  // The same header and claims (`kid` included), signed by a key the server does not know.
  const input = token.slice(0, token.lastIndexOf('.'));
  const forged = `${input}.${sign('sha256', Buffer.from(input), forger.privateKey).toString('base64url')}`;

  return {
    [VARIABLES.signingKeyFile]: signingKeyFile,
    [VARIABLES.publicKey]: issuer.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    [VARIABLES.apiKey]: apiKey,
    [VARIABLES.unknownApiKey]: generateApiKey(),
    [VARIABLES.token]: token,
    [VARIABLES.forgedToken]: forged,
  };
}

/** Removes the run's signing key. */
export async function referenceTeardown(): Promise<void> {
  if (keyDir !== undefined) rmSync(keyDir, { recursive: true, force: true });
  keyDir = undefined;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const variables = await referenceFixture();
  for (const [name, value] of Object.entries(variables)) {
    process.stdout.write(`export ${name}='${value.replace(/'/g, `'\\''`)}'\n`);
  }
}
