import type { RawData, WebSocket } from 'ws';
import { CloseCode, WebSocketCloseError } from '../close-codes.js';
import { closeWithCredential } from '../credential-binding.js';
import { ChannelGate } from './access.js';
import {
  type Connection,
  ConnectionOutput,
  closeAll,
  connectionId,
  openConnection,
} from './connection.js';
import { Heartbeat } from './heartbeat.js';
import { channelName, optionalString, parseMessage, policy } from './input.js';
import type { ChannelConnectionContext, ChannelProtocolOptions } from './options.js';
import { takeToken } from './rate-limit.js';
import { Relays } from './relay.js';
import { type ChannelSettings, channelSettings } from './settings.js';
import { Subscriptions } from './subscriptions.js';

export type {
  ChannelAccess,
  ChannelAuthorizer,
  ChannelConnectionContext,
  ChannelMessageContext,
  ChannelMessageHandler,
  ChannelMessageReader,
  ChannelMessageSender,
  ChannelProtocolOptions,
  ChannelRateLimit,
} from './options.js';

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

/** `ws` closes a failing connection itself (1009 for an oversized message, 1002 …). */
function ignoreSocketError(): void {}

/** The units a protocol is made of, all sharing its connections. */
interface Parts {
  settings: ChannelSettings;
  connections: Map<WebSocket, Connection>;
  output: ConnectionOutput;
  subscriptions: Subscriptions;
  relays: Relays;
  heartbeat: Heartbeat;
}

function assemble(options: ChannelProtocolOptions): Parts {
  const settings = channelSettings(options);
  const { hub, relayChannel } = settings;
  const connections = new Map<WebSocket, Connection>();
  const output = new ConnectionOutput(
    settings.maxBufferedBytes,
    settings.closeTimeout,
    settings.reportError,
  );
  // relays cross processes through the hub; the relay channel is no client's to use
  const cross =
    hub === undefined || relayChannel === false ? undefined : { hub, channel: relayChannel };
  const gate = new ChannelGate(settings.authorize, cross?.channel, output);
  return {
    settings,
    connections,
    output,
    subscriptions: new Subscriptions(hub, gate, output),
    relays: new Relays(connections, settings.message, gate, output, cross),
    heartbeat: new Heartbeat(connections, settings.heartbeat),
  };
}

/** Serves one message of a connection, by its `type`. */
function dispatch(
  parts: Parts,
  conn: Connection,
  message: Record<string, unknown>,
): void | Promise<void> {
  const { output, subscriptions } = parts;
  switch (message.type) {
    case 'join':
      conn.user = optionalString(message, 'user', 1, 100) ?? conn.user;
      return output.sendJson(conn, {
        type: 'welcome',
        id: connectionId(conn),
        user: conn.principal?.sub ?? null,
      });
    case 'ping':
      return output.sendJson(conn, { type: 'pong' });
    case 'subscribe':
      return subscriptions.subscribe(conn, message);
    case 'unsubscribe':
      return subscriptions.unsubscribe(conn, channelName(message, true));
    case 'message':
      return parts.relays.relay(conn, message);
  }
  const type = message.type;
  const { extend } = parts.settings;
  const handler =
    typeof type === 'string' && Object.hasOwn(extend, type) ? extend[type] : undefined;
  if (handler === undefined) throw policy('Unknown message type.');
  return handler(message, {
    id: connectionId(conn),
    ws: conn.ws,
    principal: conn.principal,
    channels: new Set(conn.channels?.names()),
    send: (m) => output.sendJson(conn, m),
  });
}

/** Serves one frame of a connection: rate limit, text only, then {@link dispatch}. */
function receive(parts: Parts, conn: Connection, data: RawData, isBinary: boolean): void {
  if (conn.ws.readyState !== conn.ws.OPEN) return;
  try {
    if (!takeToken(conn, parts.settings.rateLimit)) {
      throw new WebSocketCloseError(CloseCode.POLICY_VIOLATION, 'rate limit exceeded');
    }
    if (isBinary) {
      throw new WebSocketCloseError(
        CloseCode.UNSUPPORTED_DATA,
        'Binary messages are not accepted.',
      );
    }
    const result = dispatch(parts, conn, parseMessage(data));
    if (result !== undefined && typeof (result as Promise<void>).then === 'function') {
      (result as Promise<void>).then(undefined, (error: unknown) => parts.output.fail(conn, error));
    }
  } catch (error) {
    parts.output.fail(conn, error);
  }
}

/**
 * The reference channel protocol over WebSocket: JSON text frames with a `type` (`join`,
 * `ping`, `subscribe`, `unsubscribe`, `message`, plus `extend`ed ones), relaying messages to
 * the other connections (of a channel, when named), forwarding hub events as `push`, closing
 * with 1008 on malformed input, 1003 on binary frames and 1011 on server errors, with a
 * protocol-level heartbeat.
 *
 * What a `message` carries is the `message` option's (see
 * {@link ChannelProtocolOptions.message}): by default the chat fields, a `text` of 1–1000
 * characters and an optional `user` of 1–100 (else the `user` of the connection's last
 * `join`), relayed as `{"type":"message","text":…,"user":…,"from":<principal sub>,
 * "channel":…}`; give a reader to relay other fields.
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
 * // other message fields than the chat's `text` and `user`:
 * createChannelProtocol({ hub, message: (m) => ({ cursor: readCursor(m) }) });
 *
 * // in the browser, after a reconnection:
 * socket.send(JSON.stringify({ type: 'subscribe', channel: 'room:1', since: lastPosition }));
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc6455#section-7.4.1 | RFC 6455 §7.4.1}
 */
export function createChannelProtocol(options: ChannelProtocolOptions = {}): ChannelProtocol {
  const parts = assemble(options);
  const { settings, connections, relays, heartbeat } = parts;
  let closed = false;

  // One listener of each kind for every connection: no closures per connection.
  function onPong(this: WebSocket): void {
    const conn = connections.get(this);
    if (conn !== undefined) conn.alive = true;
  }

  function onSocketMessage(this: WebSocket, data: RawData, isBinary: boolean): void {
    const conn = connections.get(this);
    if (conn !== undefined) receive(parts, conn, data, isBinary);
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
    if (connections.size === 0) relays.link?.stop();
    parts.subscriptions.unsubscribeAll(conn);
  }

  function handle(ws: WebSocket, context: ChannelConnectionContext = {}): void {
    ws.on('error', ignoreSocketError);
    if (closed) {
      ws.close(CloseCode.GOING_AWAY, 'Server shutting down');
      return;
    }
    const { rateLimit } = settings;
    const conn = openConnection(
      ws,
      context.principal,
      rateLimit === false ? 0 : rateLimit.messages,
    );
    connections.set(ws, conn);
    relays.link?.start();
    ws.on('pong', onPong);
    ws.on('message', onSocketMessage);
    ws.on('close', onSocketClose);
    // revoked or expired: detached at once, inside revoke(), then closed with 1008
    closeWithCredential(ws, conn.principal, settings.revocations, () => detach(conn));
    heartbeat.start();
  }

  async function close(): Promise<void> {
    closed = true;
    relays.link?.close();
    heartbeat.stop();
    await closeAll(connections, settings.closeTimeout);
  }

  return {
    handle,
    close,
    get size() {
      return connections.size;
    },
  };
}
