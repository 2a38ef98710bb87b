/**
 * The orchestrator's side of a fan-out run: the client process (spawned with an IPC channel,
 * every wait for it bounded) and the server's `/_bench/` routes.
 */
import { spawn } from 'node:child_process';
import { request } from 'node:http';
import { type IpcChild, ipcChild } from '../lib/ipc-child.js';
import { ROOT } from '../lib/paths.js';
import type { ClientCommand, ClientOptions, ClientReport, ServerStats } from './types.js';

export const CLIENT_SCRIPT = 'bench/realtime/clients.ts';

export type ClientProcess = IpcChild<ClientReport, ClientCommand>;

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
  return ipcChild<ClientReport, ClientCommand>(child, `clients of ${name}`);
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
