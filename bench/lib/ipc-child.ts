/**
 * A child process driven over IPC (the bench's fan-out clients and webhook senders, the soak
 * tests' server and clients): reports queued by type, every wait bounded, a `failed` report
 * or an exit failing every wait after. What a child writes to piped stdout/stderr is kept,
 * and its tail goes into the failure.
 */
import type { ChildProcess } from 'node:child_process';

const STOP_TIMEOUT_MS = 5_000;

/** What every child reports: a typed message, or `{ type: 'failed', message }`. */
export type ChildReport = { type: string } & Record<string, unknown>;

type ReportOf<R extends { type: string }, T extends R['type']> = Extract<R, { type: T }>;

/** The orchestrator's handle on one child. */
export interface IpcChild<R extends { type: string }, C> {
  pid: number | undefined;
  send(command: C): void;
  /** The next report of `type` (queued ones first); rejects after `timeoutMs` or on failure. */
  next<T extends R['type']>(type: T, timeoutMs: number): Promise<ReportOf<R, T>>;
  /** What it wrote on piped stdout and stderr (nothing when they are not piped). */
  output(): string;
  /** Asks it to exit, then kills it if it has not within 5 s. */
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

/** Wraps a child spawned with an `ipc` stdio; `label` names it in every error. */
export function ipcChild<R extends { type: string }, C>(
  child: ChildProcess,
  label: string,
): IpcChild<R, C> {
  const queue: R[] = [];
  let out = '';
  const keep = (d: Buffer) => {
    out += d.toString();
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  let failure: string | undefined;
  let waiter: { type: string; resolve: (r: R) => void; reject: (e: Error) => void } | undefined;
  const failWith = (message: string) => {
    failure ??= `${label}: ${message}${out === '' ? '' : `\n${out.slice(-2000)}`}`;
    waiter?.reject(new Error(failure));
    waiter = undefined;
  };
  child.on('message', (report: R) => {
    if (report.type === 'failed') return failWith(String((report as ChildReport).message));
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
    send: (command) => {
      if (child.connected) child.send(command as object); // gone: `next` reports why
    },
    next<T extends R['type']>(type: T, timeoutMs: number) {
      const queued = queue.findIndex((r) => r.type === type);
      if (queued !== -1) return Promise.resolve(queue.splice(queued, 1)[0] as ReportOf<R, T>);
      if (failure !== undefined) return Promise.reject(new Error(failure));
      return new Promise<ReportOf<R, T>>((resolve, reject) => {
        const timer = setTimeout(() => {
          waiter = undefined;
          reject(new Error(`${label}: no \`${type}\` report within ${timeoutMs} ms`));
        }, timeoutMs);
        waiter = {
          type,
          resolve: (r) => {
            clearTimeout(timer);
            resolve(r as ReportOf<R, T>);
          },
          reject: (e) => {
            clearTimeout(timer);
            reject(e);
          },
        };
      });
    },
    output: () => out,
    async stop() {
      failure ??= 'stopped';
      if (child.connected) child.send({ type: 'exit' });
      if (!(await exited(child, STOP_TIMEOUT_MS))) {
        child.kill('SIGKILL');
        await exited(child, STOP_TIMEOUT_MS);
      }
    },
  };
}
