// One connection of the channel protocol, and every send to it.
import { randomBytes } from 'node:crypto';
import type { WebSocket } from 'ws';
import type { Principal } from '../../core/principal.js';
import { CloseCode, closeCodeFor, WebSocketCloseError } from '../close-codes.js';
import type { ChannelSet } from './set.js';

/** One open connection of a channel protocol. */
export interface Connection {
  /** Made when first needed (`welcome`, hooks): a connection that never asks costs nothing. */
  id: string | undefined;
  ws: WebSocket;
  principal: Principal | undefined;
  /** The `user` of its last `join`. */
  user: string | undefined;
  /** Subscribed channels, made on the first subscription (most connections never have one). */
  channels: ChannelSet | undefined;
  /** Whether it answered the last heartbeat ping. */
  alive: boolean;
  /** Rate-limit tokens left, and when they were last refilled. */
  tokens: number;
  refilledAt: number;
  /** Set once the connection is being dropped (backpressure) or forgotten (closed). */
  dropping: boolean;
}

/** A new connection of `ws`, its rate-limit bucket holding `tokens`. */
export function openConnection(
  ws: WebSocket,
  principal: Principal | undefined,
  tokens: number,
): Connection {
  return {
    id: undefined,
    ws,
    principal,
    user: undefined,
    channels: undefined,
    alive: true,
    tokens,
    refilledAt: performance.now(),
    dropping: false,
  };
}

/** A connection's id, made on first use. */
export function connectionId(conn: Connection): string {
  conn.id ??= randomBytes(16).toString('base64url');
  return conn.id;
}

/** `ws.send` options for a prepared text payload. */
const TEXT = { binary: false } as const;

/**
 * Every send of a protocol to its connections, and how they end on error: a send to a
 * connection whose unsent data already passes `maxBufferedBytes` drops it (1013) instead of
 * queueing more; an error closes it with its close code, an unexpected one going to `onError`.
 */
export class ConnectionOutput {
  readonly #maxBufferedBytes: number;
  readonly #closeTimeout: number;
  readonly #onError: (error: unknown) => void;

  constructor(maxBufferedBytes: number, closeTimeout: number, onError: (error: unknown) => void) {
    this.#maxBufferedBytes = maxBufferedBytes;
    this.#closeTimeout = closeTimeout;
    this.#onError = onError;
  }

  /** Sends a prepared text payload; `false` when the connection is not open or was dropped. */
  send(conn: Connection, payload: string | Buffer): boolean {
    if (conn.dropping || conn.ws.readyState !== conn.ws.OPEN) return false;
    if (conn.ws.bufferedAmount > this.#maxBufferedBytes) {
      this.#drop(conn);
      return false;
    }
    conn.ws.send(payload, TEXT);
    return true;
  }

  /** Sends one JSON message. */
  sendJson(conn: Connection, message: object): void {
    this.send(conn, JSON.stringify(message));
  }

  /** Closes a connection for `error`: its close code and reason, 1011 for an unexpected one. */
  fail(conn: Connection, error: unknown): void {
    const code = closeCodeFor(error);
    if (code === CloseCode.INTERNAL_ERROR && !(error instanceof WebSocketCloseError)) {
      this.report(error);
    }
    const reason = error instanceof WebSocketCloseError ? error.reason : 'Internal error';
    if (conn.ws.readyState === conn.ws.OPEN || conn.ws.readyState === conn.ws.CONNECTING) {
      try {
        conn.ws.close(code, reason);
      } catch {
        conn.ws.terminate();
      }
    }
  }

  /** Hands an unexpected error to `onError`; a failing logger must not crash the server. */
  report(error: unknown): void {
    try {
      this.#onError(error);
    } catch {
      // nothing left to tell
    }
  }

  /** Drops a connection that stopped reading: 1013, then terminate after `closeTimeout`. */
  #drop(conn: Connection): void {
    if (conn.dropping) return;
    conn.dropping = true;
    const deadline = setTimeout(() => conn.ws.terminate(), this.#closeTimeout);
    deadline.unref();
    conn.ws.once('close', () => clearTimeout(deadline));
    try {
      conn.ws.close(CloseCode.TRY_AGAIN_LATER, 'Send buffer full');
    } catch {
      conn.ws.terminate();
    }
  }
}

/**
 * Closes every connection with 1001 and waits for them to finish closing, terminating those
 * still open after `timeout` milliseconds.
 */
export async function closeAll(
  connections: ReadonlyMap<WebSocket, Connection>,
  timeout: number,
): Promise<void> {
  const pending = [...connections.values()].map(
    (conn) =>
      new Promise<void>((resolve) => {
        if (conn.ws.readyState === conn.ws.CLOSED) return resolve();
        conn.ws.once('close', () => resolve());
        conn.ws.close(CloseCode.GOING_AWAY, 'Server shutting down');
      }),
  );
  if (pending.length === 0) return;
  let deadline: NodeJS.Timeout | undefined;
  const timedOut = new Promise<void>((resolve) => {
    deadline = setTimeout(resolve, timeout);
    deadline.unref();
  });
  await Promise.race([Promise.all(pending), timedOut]);
  clearTimeout(deadline);
  for (const conn of connections.values()) conn.ws.terminate();
}
