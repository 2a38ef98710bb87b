/**
 * The orchestrator's side of a fan-out run: the client process (spawned with an IPC channel,
 * every wait for it bounded) and the server's `/_bench/` routes.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { request } from 'node:http';
import { ROOT } from '../lib/paths.js';
import type { ClientCommand, ClientOptions, ClientReport, ServerStats } from './types.js';

export const CLIENT_SCRIPT = 'bench/realtime/clients.ts';
const STOP_TIMEOUT_MS = 5_000;

type ReportOf<T extends ClientReport['type']> = Extract<ClientReport, { type: T }>;

export interface ClientProcess {
  pid: number | undefined;
  send(command: ClientCommand): void;
  /** The next report of `type` (queued ones first); rejects after `timeoutMs` or on failure. */
  next<T extends ClientReport['type']>(type: T, timeoutMs: number): Promise<ReportOf<T>>;
  stop(): Promise<void>;
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

/** Starts `node --import tsx bench/realtime/clients.ts '<options>'` for one server. */
export function startClients(name: string, options: ClientOptions): ClientProcess {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', CLIENT_SCRIPT, JSON.stringify(options)],
    {
      cwd: ROOT,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    },
  );
  const queue: ClientReport[] = [];
  let failure: string | undefined;
  let waiter:
    | { type: string; resolve: (r: ClientReport) => void; reject: (e: Error) => void }
    | undefined;
  const failWith = (message: string) => {
    failure ??= `clients of ${name}: ${message}`;
    waiter?.reject(new Error(failure));
    waiter = undefined;
  };
  child.on('message', (report: ClientReport) => {
    if (report.type === 'failed') return failWith(report.message);
    if (waiter?.type === report.type) {
      const { resolve } = waiter;
      waiter = undefined;
      resolve(report);
    } else queue.push(report);
  });
  child.once('error', (error) => failWith(error.message));
  child.once('exit', (code, signal) => failWith(`exited (code ${code}, signal ${signal})`));
  return {
    pid: child.pid,
    send: (command) => child.send(command),
    next(type, timeoutMs) {
      const queued = queue.findIndex((r) => r.type === type);
      if (queued !== -1)
        return Promise.resolve(queue.splice(queued, 1)[0] as ReportOf<typeof type>);
      if (failure !== undefined) return Promise.reject(new Error(failure));
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiter = undefined;
          reject(new Error(`clients of ${name}: no \`${type}\` report within ${timeoutMs} ms`));
        }, timeoutMs);
        waiter = {
          type,
          resolve: (r) => {
            clearTimeout(timer);
            resolve(r as ReportOf<typeof type>);
          },
          reject: (e) => {
            clearTimeout(timer);
            reject(e);
          },
        };
      });
    },
    async stop() {
      failure ??= 'stopped';
      if (child.connected) child.send({ type: 'exit' } satisfies ClientCommand);
      if (!(await exited(child, STOP_TIMEOUT_MS))) {
        child.kill('SIGKILL');
        await exited(child, STOP_TIMEOUT_MS);
      }
    },
  };
}

/** One request to a server's `/_bench/` route, bounded by `timeoutMs`; the JSON answer. */
function call<T>(port: number, method: string, path: string, timeoutMs: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => {
        if (res.statusCode === 200) resolve(JSON.parse(body) as T);
        else reject(new Error(`${method} ${path}: ${res.statusCode} ${body}`));
      });
    });
    req.on('timeout', () =>
      req.destroy(new Error(`${method} ${path}: no answer in ${timeoutMs} ms`)),
    );
    req.on('error', reject);
    req.end();
  });
}

/** The server's memory after a forced GC, and how many connections it holds. */
export const serverStats = (port: number) =>
  call<ServerStats>(port, 'GET', '/_bench/stats', 30_000);

/** Has the server broadcast `count` messages of `round`; resolves with its send-loop ms. */
export const broadcast = (port: number, round: number, count: number, timeoutMs: number) =>
  call<{ sendMs: number }>(
    port,
    'POST',
    `/_bench/broadcast?round=${round}&count=${count}`,
    timeoutMs,
  );
