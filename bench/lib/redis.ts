/**
 * A real `redis-server` for the comparisons that need one, started by the orchestrator (in a
 * comparison's `setup`) on a free port of 127.0.0.1 with no persistence, and stopped in its
 * `teardown` (or, at the latest, when the orchestrator exits). Every wait is bounded.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';

const READY_TIMEOUT_MS = 10_000;
const STOP_TIMEOUT_MS = 5_000;
/** The variable (in every server's environment) holding the URL. */
export const REDIS_URL_VARIABLE = 'BENCH_REDIS_URL';

export interface BenchRedis {
  url: string;
  pid: number | undefined;
  /** Stops the server (SIGTERM, then SIGKILL); safe to call twice. */
  stop(): Promise<void>;
}

function redisServerBinary(): string {
  try {
    const found = execFileSync('sh', ['-c', 'command -v redis-server'], {
      encoding: 'utf8',
    }).trim();
    if (found !== '') return found;
  } catch {
    // reported below
  }
  throw new Error(
    'redis-server is not installed (Debian: `apt-get install redis-server`); ' +
      'the Redis comparisons need a real one',
  );
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

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

/** Resolves once the server answers PING; throws after {@link READY_TIMEOUT_MS}. */
async function waitReady(port: number, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`redis-server exited at start (code ${child.exitCode})`);
    }
    const probe = new Redis({
      port,
      host: '127.0.0.1',
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      connectTimeout: 1_000,
      retryStrategy: () => null,
    });
    probe.on('error', () => {});
    try {
      await probe.connect();
      await probe.ping();
      return;
    } catch {
      await sleep(50);
    } finally {
      probe.disconnect();
    }
  }
  throw new Error(`redis-server did not answer PING within ${READY_TIMEOUT_MS} ms`);
}

/** Starts `redis-server --port <free> --bind 127.0.0.1 --save '' --appendonly no`. */
export async function startBenchRedis(): Promise<BenchRedis> {
  const binary = redisServerBinary();
  const port = await freePort();
  const child = spawn(
    binary,
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
  // Never outlive the orchestrator, even when it fails before `teardown`.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const stop = async () => {
    process.removeListener('exit', killOnExit);
    if (await exited(child, 0)) return;
    child.kill('SIGTERM');
    if (!(await exited(child, STOP_TIMEOUT_MS))) {
      child.kill('SIGKILL');
      await exited(child, STOP_TIMEOUT_MS);
    }
  };
  try {
    await waitReady(port, child);
  } catch (error) {
    await stop();
    throw error;
  }
  return { url: `redis://127.0.0.1:${port}`, pid: child.pid, stop };
}

/**
 * The problems with the counters under `prefix` in Redis at `url`: none when at least one key
 * holds a positive count and expires within `windowMs` (a rate limit really counted there).
 */
export async function checkRedisCounter(
  url: string,
  prefix: string,
  windowMs: number,
): Promise<string[]> {
  const client = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    connectTimeout: 2_000,
    commandTimeout: 2_000,
    retryStrategy: () => null,
  });
  client.on('error', () => {});
  try {
    await client.connect();
    const [, keys] = await client.scan('0', 'MATCH', `${prefix}*`, 'COUNT', 1000);
    if (keys.length === 0) return [`no key matching ${JSON.stringify(`${prefix}*`)} in Redis`];
    const key = keys[0]!;
    const [count, ttl] = await Promise.all([client.get(key), client.pttl(key)]);
    const problems: string[] = [];
    if (!(Number(count) >= 1)) problems.push(`Redis key ${key} holds ${JSON.stringify(count)}`);
    if (!(ttl > 0 && ttl <= windowMs)) problems.push(`Redis key ${key} expires in ${ttl} ms`);
    return problems;
  } catch (error) {
    return [`Redis at ${url}: ${error instanceof Error ? error.message : String(error)}`];
  } finally {
    client.disconnect();
  }
}
