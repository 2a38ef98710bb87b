import { randomBytes } from 'node:crypto';
import type { RawData, WebSocket } from 'ws';
import type { Principal } from '../auth/principal.js';
import type { HubMessage, Position } from '../realtime/broker.js';
import { followChannel } from '../realtime/follow.js';
import { formatPosition, parsePosition } from '../realtime/position.js';
import {
  channelName,
  optionalString,
  parseMessage,
  policy,
  requiredString,
} from './channel-input.js';
import {
  type ChannelConnectionContext,
  type ChannelProtocolOptions,
  channelSettings,
} from './channel-options.js';
import { createRelayLink, type RelayedMessage } from './channel-relay.js';
import { ChannelSet } from './channel-set.js';
import { CloseCode, closeCodeFor, WebSocketCloseError } from './close-codes.js';
import { closeWithCredential } from './credential-binding.js';

export type {
  ChannelAccess,
  ChannelAuthorizer,
  ChannelConnectionContext,
  ChannelMessageContext,
  ChannelMessageHandler,
  ChannelProtocolOptions,
  ChannelRateLimit,
} from './channel-options.js';

/**
 * The channel protocol: hand it connections, close it on shutdown.
 *
 * @example
 * ```ts
 * const channels: ChannelProtocol = createChannelProtocol({ hub });
 * server.on('upgrade', createUpgradeHandler({ path: '/ws', onConnection: channels.handle }));
 * ```
 */
export interface ChannelProtocol {
  /** Serves one open connection until it closes. */
  handle(ws: WebSocket, context?: ChannelConnectionContext): void;
  /** Closes every connection with 1001, terminating those that do not finish in time. */
  close(): Promise<void>;
  /** How many connections are open. */
  readonly size: number;
}

interface Connection {
  /** Made when first needed (`welcome`, hooks): a connection that never asks costs nothing. */
  id: string | undefined;
  ws: WebSocket;
  principal: Principal | undefined;
  user: string | undefined;
  /** Subscribed channels, made on the first subscription (most connections never have one). */
  channels: ChannelSet | undefined;
  alive: boolean;
  /** Rate-limit tokens left, and when they were last refilled. */
  tokens: number;
  refilledAt: number;
  /** Set once the connection is being dropped for backpressure. */
  dropping: boolean;
}

/** A push as plain subscribers get it, serialized once per message for all of them. */
const plainPushes = new WeakMap<HubMessage, Buffer>();
/** A push with `channel` and `position`, for subscribers that asked to resume. */
const positionedPushes = new WeakMap<HubMessage, Buffer>();
/** `ws` closes a failing connection itself (1009 for an oversized message, 1002 …). */
function ignoreSocketError(): void {}

/** A connection's id, made on first use. */
function idOf(conn: Connection): string {
  conn.id ??= randomBytes(16).toString('base64url');
  return conn.id;
}

/** `ws.send` options for a prepared text payload. */
const TEXT = { binary: false } as const;

function pushPayload(m: HubMessage, positioned: boolean): Buffer {
  const cache = positioned ? positionedPushes : plainPushes;
  let payload = cache.get(m);
  if (payload === undefined) {
    const push = positioned
      ? {
          type: 'push',
          channel: m.channel,
          event: m.event,
          data: m.data,
          position: formatPosition(m),
        }
      : { type: 'push', event: m.event, data: m.data };
    // Its own memory, not a slice of node's 8 KiB pool: a cached payload lives as long as the
    // hub's history keeps the message, and a pooled one would pin the whole block with it.
    const text = JSON.stringify(push);
    payload = Buffer.allocUnsafeSlow(Buffer.byteLength(text));
    payload.write(text);
    cache.set(m, payload);
  }
  return payload;
}

/** The `since` of a `subscribe`: a position, `null` for one that is not ours, or absent. */
function sinceOf(message: Record<string, unknown>) {
  const since = optionalString(message, 'since', 1, 256);
  return since === undefined ? undefined : (parsePosition(since) ?? null);
}

/**
 * The reference channel protocol over WebSocket: JSON text frames with a `type` (`join`,
 * `ping`, `subscribe`, `unsubscribe`, `message`, plus `extend`ed ones), relaying messages to
 * the other connections (of a channel, when named), forwarding hub events as `push`, closing
 * with 1008 on malformed input, 1003 on binary frames and 1011 on server errors, with a
 * protocol-level heartbeat.
 *
 * A client that reconnects resumes where it was: `{"type":"subscribe","channel":"c",
 * "since":"<position>"}` (the `position` of the last push it saw) is answered with
 * `{"type":"subscribed","channel":"c","position":…,"recovered":true}` followed by every push it
 * missed, then the live ones; when the hub's history no longer holds them (or the position is
 * from another epoch), `recovered` is `false`, nothing is replayed and `position` is where the
 * channel stands now: the client reloads its state. `{"type":"subscribe","channel":"c",
 * "recover":true}` starts such a subscription afresh. Pushes of these subscriptions carry
 * `channel` and `position`; plain subscriptions get the bare `push` of the reference protocol.
 *
 * A connection handed over with a principal ends with its credential: revoked (an API key
 * deleted, a session signed out, a grant revoked) or expired, it is dropped from every
 * channel and relay inside `revoke()` and closed with 1008 (`credential revoked`).
 *
 * @example
 * ```ts
 * const channels = createChannelProtocol({ hub });
 * server.on('upgrade', createUpgradeHandler({ path: '/ws', onConnection: channels.handle }));
 * process.on('SIGTERM', () => channels.close());
 *
 * // in the browser, after a reconnection:
 * socket.send(JSON.stringify({ type: 'subscribe', channel: 'room:1', since: lastPosition }));
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc6455#section-7.4.1 | RFC 6455 §7.4.1}
 */
export function createChannelProtocol(options: ChannelProtocolOptions = {}): ChannelProtocol {
  const {
    hub,
    heartbeat,
    extend,
    authorize,
    closeTimeout,
    onError,
    rateLimit,
    maxBufferedBytes,
    relayChannel,
    revocations,
  } = channelSettings(options);
  const connections = new Map<WebSocket, Connection>();
  // relays cross processes through the hub; the relay channel is no client's to use
  const link =
    hub === undefined || relayChannel === false
      ? undefined
      : createRelayLink(hub, relayChannel, deliverRelay, report);
  const reserved = link === undefined ? undefined : relayChannel;
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
  function safeSend(conn: Connection, payload: string | Buffer): boolean {
    if (conn.dropping || conn.ws.readyState !== conn.ws.OPEN) return false;
    if (conn.ws.bufferedAmount > maxBufferedBytes) {
      drop(conn);
      return false;
    }
    conn.ws.send(payload, TEXT);
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

  /** Hands an unexpected error to `onError`; a failing logger must not crash the server. */
  function report(error: unknown): void {
    try {
      onError(error);
    } catch {
      // nothing left to tell
    }
  }

  function fail(conn: Connection, error: unknown): void {
    const code = closeCodeFor(error);
    if (code === CloseCode.INTERNAL_ERROR && !(error instanceof WebSocketCloseError)) {
      report(error);
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

  /** Whether `authorize` lets `conn` take `action` on `channel`; a refusal is answered. */
  function allowed(conn: Connection, action: 'subscribe' | 'publish', channel: string): boolean {
    if (channel !== reserved) {
      if (authorize === undefined) return true;
      if (authorize({ action, channel, principal: conn.principal, id: idOf(conn) }) === true)
        return true;
    }
    send(conn, { type: 'error', code: 'forbidden', action, channel });
    return false;
  }

  function subscribe(conn: Connection, message: Record<string, unknown>): void {
    const channel = channelName(message, true);
    const since = sinceOf(message);
    const recover = message.recover === true || since !== undefined;
    if (conn.channels?.has(channel) || !allowed(conn, 'subscribe', channel)) return;
    conn.channels ??= new ChannelSet();
    if (hub === undefined) {
      conn.channels.add(channel, undefined);
      return;
    }
    const deliver = (m: HubMessage) => {
      try {
        safeSend(conn, pushPayload(m, recover));
      } catch (error) {
        fail(conn, error);
      }
    };
    const { unsubscribe, ready } = followChannel(hub, channel, {
      since,
      ...(recover && {
        onStart: ({ recovered, position }) =>
          send(conn, {
            type: 'subscribed',
            channel,
            position: formatPosition(position),
            ...(recovered !== undefined && { recovered }),
          }),
        // live pushes lost later (a dropped broker connection): told like a failed resume
        onLost: (position: Position) =>
          send(conn, {
            type: 'subscribed',
            channel,
            position: formatPosition(position),
            recovered: false,
          }),
      }),
      onEvent: deliver,
    });
    conn.channels.add(channel, unsubscribe);
    ready.catch((error: unknown) => {
      if (conn.channels?.get(channel) === unsubscribe) fail(conn, error);
    });
  }

  function unsubscribe(conn: Connection, channel: string): void {
    conn.channels?.take(channel)?.();
  }

  function relay(from: Connection, message: Record<string, unknown>): void {
    const text = requiredString(message, 'text', 1, 1000);
    const user = optionalString(message, 'user', 1, 100) ?? from.user;
    const channel = channelName(message, false);
    if (channel !== undefined && !allowed(from, 'publish', channel)) return;
    const out: RelayedMessage = { type: 'message', text, from: from.principal?.sub };
    if (user !== undefined) out.user = user;
    if (channel !== undefined) out.channel = channel;
    deliverRelay(Buffer.from(JSON.stringify(out)), channel, from);
    link?.publish(out);
  }

  /** A relay to every connection of this process but its sender (of `channel`, if named). */
  function deliverRelay(payload: Buffer, channel: string | undefined, from?: Connection): void {
    for (const conn of connections.values()) {
      if (conn === from) continue;
      if (channel !== undefined && !conn.channels?.has(channel)) continue;
      safeSend(conn, payload);
    }
  }

  function dispatch(conn: Connection, message: Record<string, unknown>): void | Promise<void> {
    switch (message.type) {
      case 'join':
        conn.user = optionalString(message, 'user', 1, 100) ?? conn.user;
        return send(conn, { type: 'welcome', id: idOf(conn), user: conn.principal?.sub ?? null });
      case 'ping':
        return send(conn, { type: 'pong' });
      case 'subscribe':
        return subscribe(conn, message);
      case 'unsubscribe':
        return unsubscribe(conn, channelName(message, true));
      case 'message':
        return relay(conn, message);
    }
    const type = message.type;
    const handler =
      typeof type === 'string' && Object.hasOwn(extend, type) ? extend[type] : undefined;
    if (handler === undefined) throw policy('Unknown message type.');
    return handler(message, {
      id: idOf(conn),
      ws: conn.ws,
      principal: conn.principal,
      channels: new Set(conn.channels?.names()),
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
      const result = dispatch(conn, parseMessage(data));
      if (result !== undefined && typeof (result as Promise<void>).then === 'function') {
        (result as Promise<void>).then(undefined, (error: unknown) => fail(conn, error));
      }
    } catch (error) {
      fail(conn, error);
    }
  }

  function onPong(this: WebSocket): void {
    const conn = connections.get(this);
    if (conn !== undefined) conn.alive = true;
  }

  function onSocketMessage(this: WebSocket, data: RawData, isBinary: boolean): void {
    const conn = connections.get(this);
    if (conn !== undefined) onMessage(conn, data, isBinary);
  }

  function onSocketClose(this: WebSocket): void {
    const conn = connections.get(this);
    if (conn !== undefined) detach(conn);
  }

  /** Forgets a connection: no channel, relay or reply reaches it any more. */
  function detach(conn: Connection): void {
    if (connections.get(conn.ws) !== conn) return;
    conn.dropping = true;
    connections.delete(conn.ws);
    if (connections.size === 0) link?.stop();
    if (conn.channels !== undefined) {
      for (const channel of conn.channels.names()) unsubscribe(conn, channel);
    }
  }

  function beat(): void {
    for (const conn of connections.values()) {
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
    ws.on('error', ignoreSocketError);
    if (closed) {
      ws.close(CloseCode.GOING_AWAY, 'Server shutting down');
      return;
    }
    const conn: Connection = {
      id: undefined,
      ws,
      principal: context.principal,
      user: undefined,
      channels: undefined,
      alive: true,
      tokens: rateLimit === false ? 0 : rateLimit.messages,
      refilledAt: performance.now(),
      dropping: false,
    };
    // One listener of each kind for every connection: no closures per connection.
    connections.set(ws, conn);
    link?.start();
    ws.on('pong', onPong);
    ws.on('message', onSocketMessage);
    ws.on('close', onSocketClose);
    // revoked or expired: detached at once, inside revoke(), then closed with 1008
    closeWithCredential(ws, conn.principal, revocations, () => detach(conn));
    if (heartbeat > 0 && timer === undefined) {
      timer = setInterval(beat, heartbeat);
      timer.unref();
    }
  }

  async function close(): Promise<void> {
    closed = true;
    link?.close();
    if (timer !== undefined) clearInterval(timer);
    timer = undefined;
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
      deadline = setTimeout(resolve, closeTimeout);
      deadline.unref();
    });
    await Promise.race([Promise.all(pending), timedOut]);
    clearTimeout(deadline);
    for (const conn of connections.values()) conn.ws.terminate();
  }

  return {
    handle,
    close,
    get size() {
      return connections.size;
    },
  };
}
