/**
 * The orchestrator's side of a sender run: each sender process (spawned with an IPC channel,
 * every wait for it bounded) and the receiver's `/_bench/` routes.
 */
import { spawn } from 'node:child_process';
import { request } from 'node:http';
import { type IpcChild, ipcChild } from '../lib/ipc-child.js';
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

export type SenderProcess = IpcChild<SenderReport, SenderCommand>;

const senderArgs = (spec: SenderSpec, options: SenderOptions) => [
  ...(spec.args ?? []),
  JSON.stringify(options),
];

/** A sender's command line as run (the receiver's port varies; the secret is in its env). */
export function senderCommandLine(spec: SenderSpec, options: SenderOptions): string {
  const example = { ...options, url: options.url.replace(/:\d+\//, ':<port>/') };
  return nodeCommand(spec.entry, [...(spec.args ?? []), `'${JSON.stringify(example)}'`]);
}

/**
 * Starts `node [nodeArgs…] --import tsx <entry> [args…] '<options>'`, `secret` in its
 * environment.
 */
export function startSender(
  spec: SenderSpec,
  options: SenderOptions,
  secret: string,
  nodeArgs: readonly string[] = [],
): SenderProcess {
  const child = spawn(
    process.execPath,
    [...nodeArgs, '--import', 'tsx', spec.entry, ...senderArgs(spec, options)],
    {
      cwd: ROOT,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      env: { ...process.env, [SECRET_ENV]: secret, NODE_ENV: 'production' },
    },
  );
  return ipcChild<SenderReport, SenderCommand>(child, `sender ${spec.name}`);
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
