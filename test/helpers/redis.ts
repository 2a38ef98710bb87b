// A real redis-server per suite, on a free port of 127.0.0.1, with no persistence. Suites that
// need it use `describe.skipIf(!hasRedis)`; without redis-server they are skipped with a note.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { Redis } from 'ioredis';
import { requireTool, runs } from './tools.js';

function findRedisServer(): string | undefined {
  try {
    return (
      execFileSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' }).trim() ||
      undefined
    );
  } catch {
    return undefined;
  }
}

const binary = findRedisServer();

/** Whether `redis-server` is installed (Debian: `apt-get install redis-server`); under CI it must be. */
export const hasRedis = requireTool(
  'redis-server',
  binary !== undefined && runs('redis-cli', ['--version']),
  'apt-get install redis-server; .ci/run does',
);

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

/** A running redis-server that can be stopped and started again on the same port. */
export interface RedisServer {
  url: string;
  port: number;
  /** A new client (closed by {@link RedisServer.stop} or the suite). */
  client(): Redis;
  /** Kills the server (clients see the connection drop). */
  kill(): Promise<void>;
  /** Starts it again on the same port, empty. */
  restart(): Promise<void>;
  /** Quits every client made here and stops the server. */
  stop(): Promise<void>;
}

async function waitReady(port: number, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`redis-server exited with ${child.exitCode}`);
    const probe = new Redis({
      port,
      host: '127.0.0.1',
      lazyConnect: true,
      maxRetriesPerRequest: 0,
    });
    probe.on('error', () => {});
    try {
      await probe.connect();
      await probe.ping();
      probe.disconnect();
      return;
    } catch {
      probe.disconnect();
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  throw new Error('redis-server did not start within 10 s');
}

/** Starts a redis-server on a free port. */
export async function startRedis(): Promise<RedisServer> {
  if (binary === undefined) throw new Error('redis-server is not installed');
  const port = await freePort();
  let child: ChildProcess;
  const launch = async () => {
    child = spawn(
      binary,
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      { stdio: 'ignore' },
    );
    await waitReady(port, child);
  };
  const kill = () =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGKILL');
    });
  await launch();
  const clients: Redis[] = [];
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    client() {
      const client = new Redis({ port, host: '127.0.0.1' });
      client.on('error', () => {});
      clients.push(client);
      return client;
    },
    kill,
    async restart() {
      await kill();
      await launch();
    },
    async stop() {
      for (const client of clients.splice(0)) client.disconnect();
      await kill();
    },
  };
}
