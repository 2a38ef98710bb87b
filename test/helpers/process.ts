// A server process the suites start themselves (`next start`, a built example): a free port
// to give it, and its start awaited until it says it is ready.
import { type ChildProcess, type SpawnOptions, spawn } from 'node:child_process';
import { createServer } from 'node:net';

/** A port nobody listens on now (for a server that takes a port number, not 0). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * Starts `node args…` and resolves once its standard output says `ready`; rejects if it exits
 * first or stays silent for `ms`.
 */
export async function spawnReady(
  args: string[],
  options: SpawnOptions,
  ready: string,
  ms = 30_000,
): Promise<ChildProcess> {
  const child = spawn(process.execPath, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${args.join(' ')}: not ready in ${ms} ms`)),
      ms,
    );
    child.stdout!.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes(ready)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited with ${code}`)));
  });
  return child;
}
