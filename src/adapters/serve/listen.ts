import type { AddressInfo, Server } from 'node:net';

/**
 * Why {@link serve} could not listen, said plainly, with the fix: its `message` names the
 * address (`127.0.0.1:3000 is already in use: …`), `code` is node's (`EADDRINUSE`,
 * `EACCES`, `EADDRNOTAVAIL`, …). Its stack is its message alone: where node found the port
 * taken says nothing a reader could use.
 *
 * @example
 * ```ts
 * try {
 *   await serve(app, { port: 3000 }).ready;
 * } catch (error) {
 *   if (!(error instanceof ListenError)) throw error;
 *   console.error(error.message); // 127.0.0.1:3000 is already in use: …
 *   process.exit(1);
 * }
 * ```
 */
export class ListenError extends Error {
  /** node's code of the failure, as `EADDRINUSE`. */
  readonly code: string;
  /** The host that was asked for. */
  readonly host: string;
  /** The port that was asked for. */
  readonly port: number;

  constructor(error: NodeJS.ErrnoException, host: string, port: number) {
    super(explain(error, host, port));
    this.name = 'ListenError';
    this.code = error.code ?? 'UNKNOWN';
    this.host = host;
    this.port = port;
    this.stack = `${this.name}: ${this.message}`;
  }
}

function explain(error: NodeJS.ErrnoException, host: string, port: number): string {
  const where = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  switch (error.code) {
    case 'EADDRINUSE':
      return `${where} is already in use: stop what listens there, or choose another port (port 0 picks a free one)`;
    case 'EACCES':
      return `${where} may not be opened by this user: choose a port above 1023`;
    case 'EADDRNOTAVAIL':
      return `${where}: ${host} is not an address of this machine: listen on 127.0.0.1 (this machine only) or 0.0.0.0 (every interface)`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `${where}: the host name ${host} could not be resolved: give an address, as 127.0.0.1`;
    default:
      return `cannot listen on ${where} (${error.message})`;
  }
}

/** Listens on `host:port`; resolves with the address, rejects with a {@link ListenError}. */
export function listenOn(server: Server, port: number, host: string): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    const failed = (error: NodeJS.ErrnoException) => {
      server.off('listening', listening);
      reject(new ListenError(error, host, port));
    };
    const listening = () => {
      server.off('error', failed);
      resolve(server.address() as AddressInfo);
    };
    server.once('error', failed);
    server.once('listening', listening);
    server.listen({ port, host });
  });
}

/** The URL of a listening address, an IPv6 host in brackets. */
export function urlOf(address: AddressInfo, tls: boolean): string {
  const host = address.address.includes(':') ? `[${address.address}]` : address.address;
  return `${tls ? 'https' : 'http'}://${host}:${address.port}`;
}
