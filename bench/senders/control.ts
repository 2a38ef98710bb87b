/**
 * The orchestrator's side of a sender run: each sender process (spawned with an IPC channel,
 * every wait for it bounded) and the receiver's `/_bench/` routes.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { request } from 'node:http';
import { ROOT } from '../lib/paths.js';
import { nodeCommand } from '../lib/processes.js';
import {
  type CapturedRequest,
  SECRET_ENV,
  type SenderCommand,
  type SenderOptions,
  type SenderReport,
  type SenderSpec,
} from './types.js';

const STOP_TIMEOUT_MS = 5_000;

type ReportOf<T extends SenderReport['type']> = Extract<SenderReport, { type: T }>;

export interface SenderProcess {
  pid: number | undefined;
  send(command: SenderCommand): void;
  /** The next report of `type`; rejects after `timeoutMs`, or once the sender failed. */
  next<T extends SenderReport['type']>(type: T, timeoutMs: number): Promise<ReportOf<T>>;
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

const senderArgs = (spec: SenderSpec, options: SenderOptions) => [
  ...(spec.args ?? []),
  JSON.stringify(options),
];

/** A sender's command line as run (the receiver's port varies; the secret is in its env). */
export function senderCommandLine(spec: SenderSpec, options: SenderOptions): string {
  const example = { ...options, url: options.url.replace(/:\d+\//, ':<port>/') };
  return nodeCommand(spec.entry, [...(spec.args ?? []), `'${JSON.stringify(example)}'`]);
}

/** Starts `node --import tsx <entry> [args…] '<options>'`, `secret` in its environment. */
export function startSender(
  spec: SenderSpec,
  options: SenderOptions,
  secret: string,
): SenderProcess {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', spec.entry, ...senderArgs(spec, options)],
    {
      cwd: ROOT,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      env: { ...process.env, [SECRET_ENV]: secret, NODE_ENV: 'production' },
    },
  );
  const queue: SenderReport[] = [];
  let failure: string | undefined;
  let waiter:
    | { type: string; resolve: (r: SenderReport) => void; reject: (e: Error) => void }
    | undefined;
  const failWith = (message: string) => {
    failure ??= `sender ${spec.name}: ${message}`;
    waiter?.reject(new Error(failure));
    waiter = undefined;
  };
  child.on('message', (report: SenderReport) => {
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
          reject(new Error(`sender ${spec.name}: no \`${type}\` report within ${timeoutMs} ms`));
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
      if (child.connected) child.send({ type: 'exit' } satisfies SenderCommand);
      if (!(await exited(child, STOP_TIMEOUT_MS))) {
        child.kill('SIGKILL');
        await exited(child, STOP_TIMEOUT_MS);
      }
    },
  };
}

/** One request to the receiver's `/_bench/` routes within 5 s: status and JSON answer. */
function call<T>(port: number, method: string, path: string): Promise<{ status: number; body: T }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, timeout: 5_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(body) as T }));
    });
    req.on('timeout', () =>
      req.destroy(new Error(`receiver: no answer to ${method} ${path} within 5 s`)),
    );
    req.on('error', reject);
    req.end();
  });
}

/** Zeroes the receiver's count; the next request it gets is kept for {@link firstRequest}. */
export async function resetReceiver(port: number): Promise<void> {
  const { status } = await call(port, 'POST', '/_bench/reset');
  if (status !== 200) throw new Error(`receiver: reset answered ${status}`);
}

/** POSTs the receiver answered since the last reset. */
export async function receivedCount(port: number): Promise<number> {
  const { status, body } = await call<{ count: number }>(port, 'GET', '/_bench/count');
  if (status !== 200) throw new Error(`receiver: count answered ${status}`);
  return body.count;
}

/** The first request the receiver got since the last reset, if any. */
export async function firstRequest(port: number): Promise<CapturedRequest | undefined> {
  const { status, body } = await call<CapturedRequest>(port, 'GET', '/_bench/first');
  return status === 200 ? body : undefined;
}
