import { randomUUID } from 'node:crypto';
import type { RawData, WebSocket } from 'ws';
import type { Principal } from '../auth/principal.js';
import { invalidOption } from '../internal/options.js';
import type { Unsubscribe } from '../realtime/broker.js';
import type { Hub } from '../realtime/hub.js';
import { CloseCode, closeCodeFor, WebSocketCloseError } from './close-codes.js';

/** What a connection handed to the protocol carries. */
export interface ChannelConnectionContext {
  /** Who connected; its `sub` is the `from` of relayed messages and the `user` of `welcome`. */
  principal?: Principal | undefined;
}

/** What an {@link ChannelProtocolOptions.extend} handler is given. */
export interface ChannelMessageContext {
  /** The connection's id (the `id` of its `welcome`). */
  id: string;
  /** The socket. */
  ws: WebSocket;
  /** Who connected, if known. */
  principal: Principal | undefined;
  /** The channels the connection is subscribed to. */
  channels: ReadonlySet<string>;
  /** Sends one JSON message to this connection (dropped when it is no longer open). */
  send(message: object): void;
}

/** A handler for an application message type; throw a `WebSocketCloseError` to close. */
export type ChannelMessageHandler = (
  message: Record<string, unknown>,
  context: ChannelMessageContext,
) => void | Promise<void>;

/** Options of {@link createChannelProtocol}. */
export interface ChannelProtocolOptions {
  /** Source of server pushes: a `subscribe` also subscribes to the hub channel of that name. */
  hub?: Hub;
  /** Milliseconds between protocol-level pings; a peer that missed the last pong is ended. 0 disables. @defaultValue 30000 */
  heartbeat?: number;
  /** Handlers for application message types (the built-in types cannot be replaced). */
  extend?: Readonly<Record<string, ChannelMessageHandler>>;
  /** How long `close()` waits for clients to answer the 1001 before terminating them. @defaultValue 5000 */
  closeTimeout?: number;
  /** Called with unexpected errors, which close the connection with 1011. */
  onError?: (error: unknown) => void;
  /**
   * Per-connection limit on incoming messages, as a token bucket: a burst of up to `messages`,
   * refilled at `messages` per `intervalMs`. A connection past it is closed with 1008
   * (`rate limit exceeded`). Every data frame counts (binary and malformed ones too);
   * protocol-level pings and pongs do not. `false` disables the limit.
   * @defaultValue `{ messages: 100, intervalMs: 10_000 }`
   */
  rateLimit?: ChannelRateLimit | false;
  /**
   * Bound on a connection's unsent data (`ws.bufferedAmount`, in bytes): a send to a
   * connection already past it (a consumer that stopped reading) drops that connection with
   * 1013 (try again later) instead of queueing more, terminating it when it does not finish
   * closing within `closeTimeout`. `Infinity` disables the bound.
   * @defaultValue 1048576 (1 MiB)
   */
  maxBufferedBytes?: number;
}

/** A per-connection message rate limit: see {@link ChannelProtocolOptions.rateLimit}. */
export interface ChannelRateLimit {
  /** How many messages a connection may send in a burst, and per `intervalMs`. */
  messages: number;
  /** The refill period, in milliseconds. */
  intervalMs: number;
}

/** The channel protocol: hand it connections, close it on shutdown. */
export interface ChannelProtocol {
  /** Serves one open connection until it closes. */
  handle(ws: WebSocket, context?: ChannelConnectionContext): void;
  /** Closes every connection with 1001, terminating those that do not finish in time. */
  close(): Promise<void>;
  /** How many connections are open. */
  readonly size: number;
}

interface Connection {
  id: string;
  ws: WebSocket;
  principal: Principal | undefined;
  user: string | undefined;
  channels: Map<string, Unsubscribe | undefined>;
  alive: boolean;
  /** Rate-limit tokens left, and when they were last refilled. */
  tokens: number;
  refilledAt: number;
  /** Set once the connection is being dropped for backpressure. */
  dropping: boolean;
}

const BUILT_IN = new Set(['join', 'ping', 'subscribe', 'unsubscribe', 'message']);
const OWNER = 'createChannelProtocol()';
const DEFAULT_RATE_LIMIT: ChannelRateLimit = { messages: 100, intervalMs: 10_000 };
const DEFAULT_MAX_BUFFERED_BYTES = 1024 * 1024;

const policy = (reason: string) => new WebSocketCloseError(CloseCode.POLICY_VIOLATION, reason);

function optionalString(
  message: Record<string, unknown>,
  field: string,
  min: number,
  max: number,
): string | undefined {
  const value = message[field];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.length < min || value.length > max) {
    throw policy(`Invalid "${field}": a string of ${min}–${max} characters.`);
  }
  return value;
}

function requiredString(
  message: Record<string, unknown>,
  field: string,
  min: number,
  max: number,
): string {
  const value = optionalString(message, field, min, max);
  if (value === undefined) throw policy(`Missing "${field}".`);
  return value;
}

function parse(data: RawData): Record<string, unknown> {
  const text = Array.isArray(data)
    ? Buffer.concat(data).toString('utf8')
    : Buffer.from(data as ArrayBuffer).toString('utf8');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw policy('Messages must be JSON.');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw policy('Messages must be JSON objects.');
  }
  return value as Record<string, unknown>;
}

const defaultOnError = (error: unknown) => {
  const stack = error instanceof Error ? (error.stack ?? error.message) : String(error);
  console.error(`[portico] ws channel: ${stack}`);
};

/**
 * The reference channel protocol over WebSocket: JSON text frames with a `type` (`join`,
 * `ping`, `subscribe`, `unsubscribe`, `message`, plus `extend`ed ones), relaying messages to
 * the other connections (of a channel, when named), forwarding hub events as `push`, closing
 * with 1008 on malformed input, 1003 on binary frames and 1011 on server errors, with a
 * protocol-level heartbeat.
 *
 * @example
 * ```ts
 * const channels = createChannelProtocol({ hub });
 * server.on('upgrade', createUpgradeHandler({ path: '/ws', onConnection: channels.handle }));
 * process.on('SIGTERM', () => channels.close());
 * ```
 * @see https://www.rfc-editor.org/rfc/rfc6455#section-7.4.1
 */
export function createChannelProtocol(options: ChannelProtocolOptions = {}): ChannelProtocol {
  const { hub, extend = {}, onError = defaultOnError } = options;
  const heartbeat = options.heartbeat ?? 30_000;
  const closeTimeout = options.closeTimeout ?? 5000;
  if (!Number.isFinite(heartbeat) || heartbeat < 0) {
    throw invalidOption(`${OWNER}: \`heartbeat\` must be a number of milliseconds ≥ 0`);
  }
  if (!Number.isFinite(closeTimeout) || closeTimeout < 0) {
    throw invalidOption(`${OWNER}: \`closeTimeout\` must be a number of milliseconds ≥ 0`);
  }
  const rateLimit = options.rateLimit ?? DEFAULT_RATE_LIMIT;
  if (
    rateLimit !== false &&
    (typeof rateLimit !== 'object' ||
      rateLimit === null ||
      !Number.isInteger(rateLimit.messages) ||
      rateLimit.messages < 1 ||
      !Number.isFinite(rateLimit.intervalMs) ||
      rateLimit.intervalMs <= 0)
  ) {
    throw invalidOption(
      `${OWNER}: \`rateLimit\` must be false or { messages: integer ≥ 1, intervalMs: number > 0 }`,
    );
  }
  const maxBufferedBytes = options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES;
  if (typeof maxBufferedBytes !== 'number' || !(maxBufferedBytes > 0)) {
    throw invalidOption(`${OWNER}: \`maxBufferedBytes\` must be a number of bytes > 0`);
  }
  for (const [type, handler] of Object.entries(extend)) {
    if (BUILT_IN.has(type)) throw invalidOption(`${OWNER}: "${type}" is a built-in message type`);
    if (typeof handler !== 'function') {
      throw invalidOption(`${OWNER}: extend["${type}"] must be a function`);
    }
  }
  const connections = new Set<Connection>();
  let timer: NodeJS.Timeout | undefined;
  let closed = false;

  /** Drops a connection that stopped reading: 1013, then terminate after `closeTimeout`. */
  function drop(conn: Connection): void {
    if (conn.dropping) return;
    conn.dropping = true;
    const deadline = setTimeout(() => conn.ws.terminate(), closeTimeout);
    deadline.unref();
    conn.ws.once('close', () => clearTimeout(deadline));
    try {
      conn.ws.close(CloseCode.TRY_AGAIN_LATER, 'Send buffer full');
    } catch {
      conn.ws.terminate();
    }
  }

  /**
   * Every send goes through here: skipped unless the connection is open; a connection whose
   * unsent data already passes `maxBufferedBytes` is dropped instead of queueing more.
   */
  function safeSend(conn: Connection, payload: string): boolean {
    if (conn.dropping || conn.ws.readyState !== conn.ws.OPEN) return false;
    if (conn.ws.bufferedAmount > maxBufferedBytes) {
      drop(conn);
      return false;
    }
    conn.ws.send(payload);
    return true;
  }

  function send(conn: Connection, message: object): void {
    safeSend(conn, JSON.stringify(message));
  }

  /** Takes one rate-limit token; false when the connection has none left. */
  function take(conn: Connection): boolean {
    if (rateLimit === false) return true;
    const now = performance.now();
    const refill = ((now - conn.refilledAt) * rateLimit.messages) / rateLimit.intervalMs;
    conn.tokens = Math.min(rateLimit.messages, conn.tokens + refill);
    conn.refilledAt = now;
    if (conn.tokens < 1) return false;
    conn.tokens -= 1;
    return true;
  }

  function fail(conn: Connection, error: unknown): void {
    const code = closeCodeFor(error);
    if (code === CloseCode.INTERNAL_ERROR && !(error instanceof WebSocketCloseError)) {
      try {
        onError(error);
      } catch {
        // a failing logger must not crash the server
      }
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

  function subscribe(conn: Connection, channel: string): void {
    if (conn.channels.has(channel)) return;
    const off = hub?.subscribe(channel, (m) => {
      try {
        send(conn, { type: 'push', event: m.event, data: m.data });
      } catch (error) {
        fail(conn, error);
      }
    });
    conn.channels.set(channel, off);
  }

  function unsubscribe(conn: Connection, channel: string): void {
    const off = conn.channels.get(channel);
    conn.channels.delete(channel);
    off?.();
  }

  function relay(from: Connection, message: Record<string, unknown>): void {
    const text = requiredString(message, 'text', 1, 1000);
    const user = optionalString(message, 'user', 1, 100) ?? from.user;
    const channel = optionalString(message, 'channel', 1, 100);
    const out: Record<string, unknown> = { type: 'message', text, from: from.principal?.sub };
    if (user !== undefined) out.user = user;
    if (channel !== undefined) out.channel = channel;
    const payload = JSON.stringify(out);
    for (const conn of connections) {
      if (conn === from) continue;
      if (channel !== undefined && !conn.channels.has(channel)) continue;
      safeSend(conn, payload);
    }
  }

  function dispatch(conn: Connection, message: Record<string, unknown>): void | Promise<void> {
    switch (message.type) {
      case 'join':
        conn.user = optionalString(message, 'user', 1, 100) ?? conn.user;
        return send(conn, { type: 'welcome', id: conn.id, user: conn.principal?.sub ?? null });
      case 'ping':
        return send(conn, { type: 'pong' });
      case 'subscribe':
        return subscribe(conn, requiredString(message, 'channel', 1, 100));
      case 'unsubscribe':
        return unsubscribe(conn, requiredString(message, 'channel', 1, 100));
      case 'message':
        return relay(conn, message);
    }
    const type = message.type;
    const handler =
      typeof type === 'string' && Object.hasOwn(extend, type) ? extend[type] : undefined;
    if (handler === undefined) throw policy('Unknown message type.');
    return handler(message, {
      id: conn.id,
      ws: conn.ws,
      principal: conn.principal,
      channels: new Set(conn.channels.keys()),
      send: (m) => send(conn, m),
    });
  }

  function onMessage(conn: Connection, data: RawData, isBinary: boolean): void {
    if (conn.ws.readyState !== conn.ws.OPEN) return;
    try {
      if (!take(conn)) {
        throw new WebSocketCloseError(CloseCode.POLICY_VIOLATION, 'rate limit exceeded');
      }
      if (isBinary) {
        throw new WebSocketCloseError(
          CloseCode.UNSUPPORTED_DATA,
          'Binary messages are not accepted.',
        );
      }
      const result = dispatch(conn, parse(data));
      if (result !== undefined && typeof (result as Promise<void>).then === 'function') {
        (result as Promise<void>).then(undefined, (error: unknown) => fail(conn, error));
      }
    } catch (error) {
      fail(conn, error);
    }
  }

  function beat(): void {
    for (const conn of connections) {
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

  function handle(ws: WebSocket, context: ChannelConnectionContext = {}): void {
    ws.on('error', () => {
      // `ws` closes the connection itself (1009 for an oversized message, 1002 …)
    });
    if (closed) {
      ws.close(CloseCode.GOING_AWAY, 'Server shutting down');
      return;
    }
    const conn: Connection = {
      id: randomUUID(),
      ws,
      principal: context.principal,
      user: undefined,
      channels: new Map(),
      alive: true,
      tokens: rateLimit === false ? 0 : rateLimit.messages,
      refilledAt: performance.now(),
      dropping: false,
    };
    connections.add(conn);
    ws.on('pong', () => {
      conn.alive = true;
    });
    ws.on('message', (data, isBinary) => onMessage(conn, data, isBinary));
    ws.on('close', () => {
      connections.delete(conn);
      for (const channel of [...conn.channels.keys()]) unsubscribe(conn, channel);
    });
    if (heartbeat > 0 && timer === undefined) {
      timer = setInterval(beat, heartbeat);
      timer.unref();
    }
  }

  async function close(): Promise<void> {
    closed = true;
    if (timer !== undefined) clearInterval(timer);
    timer = undefined;
    const pending = [...connections].map(
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
      deadline = setTimeout(resolve, closeTimeout);
      deadline.unref();
    });
    await Promise.race([Promise.all(pending), timedOut]);
    clearTimeout(deadline);
    for (const conn of connections) conn.ws.terminate();
  }

  return {
    handle,
    close,
    get size() {
      return connections.size;
    },
  };
}
