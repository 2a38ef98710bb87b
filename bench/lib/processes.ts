/**
 * Child processes of a run: the servers under test (one process each, alive for the whole
 * comparison) and the load generator (one process per measurement). Every wait is bounded.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { LOAD_SCRIPT, ROOT } from './paths.js';
import type { InProcessResult, LoadOptions, LoadResult, ServerSpec } from './types.js';

const START_TIMEOUT_MS = 20_000;
const STOP_TIMEOUT_MS = 5_000;
/** Beyond the measured seconds: process start-up, tsx, connection set-up. */
const LOAD_SLACK_MS = 30_000;

/** The exact command a child runs, for BENCHMARKS.md. */
export function nodeCommand(entry: string, extraArgs: readonly string[] = []): string {
  return ['node', '--import', 'tsx', entry, ...extraArgs].join(' ');
}

export interface RunningServer {
  spec: ServerSpec;
  port: number;
  pid: number | undefined;
  stop(): Promise<void>;
}

function waitForExit(child: ChildProcess, ms: number): Promise<boolean> {
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
 * tsx follows tsconfig.json's `paths`, which map `portico` to src/ (for the tests and the
 * editor): a server under test would run portico's sources through tsx's transform instead of
 * the build its users import. bench/tsconfig.dist.json drops those paths, so `portico` resolves
 * as the package's own name, to dist/ (which `npm run bench` builds first).
 */
export const IMPORT_THE_BUILD = { TSX_TSCONFIG_PATH: 'bench/tsconfig.dist.json' };

/**
 * Starts `node --import tsx <entry>` and resolves once it prints its port; `env` (the
 * comparison's setup variables) is added to its environment.
 */
export function startServer(
  spec: ServerSpec,
  nodeArgs: readonly string[] = [],
  env: Readonly<Record<string, string>> = {},
): Promise<RunningServer> {
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', spec.entry], {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'inherit'],
    env: { ...process.env, ...env, ...IMPORT_THE_BUILD, BENCH_PARENT: '1', NODE_ENV: 'production' },
  });
  const stop = async () => {
    child.stdin?.end();
    if (!(await waitForExit(child, STOP_TIMEOUT_MS))) {
      child.kill('SIGKILL');
      await waitForExit(child, STOP_TIMEOUT_MS);
    }
  };
  return new Promise((resolve, reject) => {
    let output = '';
    let settled = false;
    const fail = (message: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(new Error(`server ${spec.name} (${spec.entry}): ${message}`));
    };
    const timer = setTimeout(
      () => fail(`no port printed within ${START_TIMEOUT_MS} ms`),
      START_TIMEOUT_MS,
    );
    child.once('error', (err) => fail(err.message));
    child.once('exit', (code, signal) => fail(`exited early (code ${code}, signal ${signal})`));
    child.stdout?.setEncoding('utf8');
    child.stdout?.on('data', (chunk: string) => {
      if (settled) return; // later output is drained and ignored
      output += chunk;
      const newline = output.indexOf('\n');
      if (newline === -1) return;
      const line = output.slice(0, newline).trim();
      const port = Number(line);
      if (!Number.isInteger(port) || port <= 0) {
        fail(`printed ${JSON.stringify(line)}, not a port`);
        return;
      }
      settled = true;
      clearTimeout(timer);
      resolve({ spec, port, pid: child.pid, stop });
    });
  });
}

/**
 * The JSON line `child` prints last, once it exits with code 0; killed past `limitMs`.
 * `what` names it in errors.
 */
function lastJsonLine<T>(child: ChildProcess, limitMs: number, what: string): Promise<T> {
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${what} did not finish within ${limitMs} ms`));
    }, limitMs);
    child.stdout?.setEncoding('utf8');
    child.stdout?.on('data', (chunk: string) => {
      output += chunk;
    });
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      const line = output.trim().split('\n').pop() ?? '';
      if (code !== 0) return reject(new Error(`${what} exited with code ${code}`));
      try {
        resolve(JSON.parse(line) as T);
      } catch {
        reject(new Error(`${what} printed ${JSON.stringify(line)}, not JSON`));
      }
    });
  });
}

/** Runs one measurement in its own `node --import tsx bench/lib/load.ts` process. */
export function runLoad(options: LoadOptions): Promise<LoadResult> {
  const child = spawn(process.execPath, ['--import', 'tsx', LOAD_SCRIPT, JSON.stringify(options)], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return lastJsonLine(child, options.durationSeconds * 1000 + LOAD_SLACK_MS, 'load generator');
}

/** How long an in-process measurement may take (three rounds each way and a sampled one). */
const IN_PROCESS_LIMIT_MS = 300_000;

/** Runs `node --import tsx <entry> report` on the build and reads the JSON line it prints. */
export function measureInProcess(entry: string): Promise<InProcessResult> {
  const child = spawn(process.execPath, ['--import', 'tsx', entry, 'report'], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, ...IMPORT_THE_BUILD, NODE_ENV: 'production' },
  });
  return lastJsonLine(child, IN_PROCESS_LIMIT_MS, entry);
}
