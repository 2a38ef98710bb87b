// The protocol-level heartbeat of the channel protocol.
import type { WebSocket } from 'ws';
import type { Connection } from './connection.js';

/**
 * Pings every connection each `interval` milliseconds, ending those that did not answer the
 * previous ping with a pong (see {@link Connection.alive}). One unref'd timer for all the
 * connections, started with the first one.
 */
export class Heartbeat {
  readonly #connections: ReadonlyMap<WebSocket, Connection>;
  readonly #interval: number;
  #timer: NodeJS.Timeout | undefined;

  constructor(connections: ReadonlyMap<WebSocket, Connection>, interval: number) {
    this.#connections = connections;
    this.#interval = interval;
  }

  /** Starts the pings, unless they run already or `interval` is 0. */
  start(): void {
    if (this.#interval === 0 || this.#timer !== undefined) return;
    this.#timer = setInterval(() => this.#beat(), this.#interval);
    this.#timer.unref();
  }

  /** Stops them. */
  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #beat(): void {
    for (const conn of this.#connections.values()) {
      if (!conn.alive) {
        conn.ws.terminate();
        continue;
      }
      conn.alive = false;
      try {
        conn.ws.ping();
      } catch {
        conn.ws.terminate();
      }
    }
  }
}
