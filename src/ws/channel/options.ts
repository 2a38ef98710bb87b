import type { WebSocket } from 'ws';
import type { Revocations } from '../../auth/revocations.js';
import type { Duration } from '../../core/duration.js';
import type { Logger } from '../../core/logger.js';
import type { Principal } from '../../core/principal.js';
import type { Hub } from '../../realtime/hub.js';

/**
 * What a connection handed to the protocol carries.
 *
 * @example
 * ```ts
 * onConnection: (ws, { principal }) => channels.handle(ws, { principal } satisfies ChannelConnectionContext),
 * ```
 */
export interface ChannelConnectionContext {
  /** Who connected; its `sub` is the `from` of relayed messages and the `user` of `welcome`. */
  principal?: Principal | undefined;
}

/**
 * What an {@link ChannelProtocolOptions.extend} handler is given.
 *
 * @example
 * ```ts
 * const whoami: ChannelMessageHandler = (_m, ctx: ChannelMessageContext) => ctx.send({ type: 'me', sub: ctx.principal?.sub });
 * ```
 */
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

/**
 * A handler for an application message type; throw a `WebSocketCloseError` to close.
 *
 * @example
 * ```ts
 * const typing: ChannelMessageHandler = (message, ctx) => ctx.send({ type: 'typing.ack' });
 * createChannelProtocol({ extend: { typing } });
 * ```
 */
export type ChannelMessageHandler = (
  message: Record<string, unknown>,
  context: ChannelMessageContext,
) => void | Promise<void>;

/**
 * What {@link ChannelProtocolOptions.authorize} decides on.
 *
 * @example
 * ```ts
 * const access: ChannelAccess = { action: 'subscribe', channel: 'room:1', principal, id };
 * ```
 */
export interface ChannelAccess {
  /** `subscribe` for a `subscribe` message, `publish` for a `message` that names the channel. */
  action: 'subscribe' | 'publish';
  /** The channel asked for. */
  channel: string;
  /** Who connected (found at the upgrade), if known. */
  principal: Principal | undefined;
  /** The connection's id. */
  id: string;
}

/**
 * Decides who may use which channel: `true` allows, `false` refuses (see
 * {@link ChannelProtocolOptions.authorize}). Synchronous: decide from the principal found at
 * the upgrade (its scopes, roles, claims).
 *
 * @example
 * ```ts
 * const authorize: ChannelAuthorizer = ({ channel, principal }) =>
 *   channel === 'public' || channel === `user:${principal?.sub}`;
 * ```
 */
export type ChannelAuthorizer = (access: ChannelAccess) => boolean;

/**
 * A per-connection message rate limit: see {@link ChannelProtocolOptions.rateLimit}.
 *
 * @example
 * ```ts
 * const rateLimit: ChannelRateLimit = { messages: 20, interval: 1000 };
 * ```
 */
export interface ChannelRateLimit {
  /** How many messages a connection may send in a burst, and per `interval` (an integer ≥ 1). */
  messages: number;
  /** The refill period, in milliseconds (an integer ≥ 1). */
  interval: Duration;
}

/**
 * Who sent a `message`, as a `ChannelMessageReader` sees it.
 *
 * @example
 * ```ts
 * const read: ChannelMessageReader = (m, sender: ChannelMessageSender) => ({ body: m.body, by: sender.user });
 * ```
 */
export interface ChannelMessageSender {
  /** The connection's id (the `id` of its `welcome`). */
  readonly id: string;
  /** Who connected, if known; its `sub` is the `from` of the relayed message. */
  readonly principal: Principal | undefined;
  /** The `user` the connection's last `join` gave (1–100 characters), if any. */
  readonly user: string | undefined;
}

/**
 * Reads the fields of a client's `message` into those relayed to the other connections (see
 * {@link ChannelProtocolOptions.message}). Throw a `WebSocketCloseError` with
 * `CloseCode.POLICY_VIOLATION` (1008) to refuse the message and close its connection; any
 * other throw closes it with 1011. The protocol adds `type`, `from` and `channel` itself:
 * the reader cannot set them.
 *
 * @example
 * ```ts
 * const read: ChannelMessageReader = (message) => {
 *   if (typeof message.body !== 'string' || message.body.length > 4000) {
 *     throw new WebSocketCloseError(CloseCode.POLICY_VIOLATION, 'Invalid "body".');
 *   }
 *   return { body: message.body };
 * };
 * createChannelProtocol({ hub, message: read });
 * ```
 */
export type ChannelMessageReader = (
  message: Readonly<Record<string, unknown>>,
  sender: ChannelMessageSender,
) => Record<string, unknown>;

/**
 * Options of {@link createChannelProtocol}.
 *
 * @example
 * ```ts
 * const options: ChannelProtocolOptions = {
 *   hub,
 *   heartbeat: 30_000,
 *   authorize: ({ channel, principal }) => channel !== 'admin' || principal?.role === 'admin',
 * };
 * ```
 */
export interface ChannelProtocolOptions {
  /**
   * Source of server pushes: a `subscribe` also subscribes to the hub channel of that name,
   * and a `subscribe` with `since` or `recover` resumes from the hub's history.
   * @defaultValue none: subscriptions are recorded, nothing is pushed
   */
  hub?: Hub;
  /**
   * Time between protocol-level pings, in milliseconds; a peer that missed the last pong is
   * ended. `0` disables them.
   * @defaultValue `30_000` (30 seconds)
   */
  heartbeat?: Duration;
  /**
   * Handlers for application message types (the built-in types cannot be replaced).
   * @defaultValue `{}`: only the built-in types
   */
  extend?: Readonly<Record<string, ChannelMessageHandler>>;
  /**
   * Decides who may subscribe to, and send messages on, which channel. A refusal answers
   * `{"type":"error","code":"forbidden","action":<action>,"channel":<name>}` and keeps the
   * connection; a throw closes it (a portico `HttpError` by its close code, so `forbidden()`
   * gives 1008; anything else 1011).
   * @defaultValue every channel allowed to every connection
   */
  authorize?: ChannelAuthorizer;
  /**
   * How long `close()` waits for clients to answer the 1001 before terminating them (and a
   * connection dropped for backpressure gets to finish closing), in milliseconds.
   * @defaultValue `5_000` (5 seconds)
   */
  closeTimeout?: Duration;
  /**
   * Where unexpected errors are logged (`error`; the connection is closed with 1011). A pino
   * logger is passed as it is.
   * @defaultValue portico's default logger (errors on stderr)
   */
  logger?: Logger;
  /**
   * Per-connection limit on incoming messages, as a token bucket: a burst of up to `messages`,
   * refilled at `messages` per `interval` (in milliseconds). A connection past it is closed
   * with 1008 (`rate limit exceeded`). Every data frame counts (binary and malformed ones
   * too); protocol-level pings and pongs do not. `false` disables the limit.
   * @defaultValue `{ messages: 100, interval: 10_000 }` (100 messages per 10 seconds)
   */
  rateLimit?: ChannelRateLimit | false;
  /**
   * Bound on a connection's unsent data (`ws.bufferedAmount`, in bytes): a send to a
   * connection already past it (a consumer that stopped reading) drops that connection with
   * 1013 (try again later) instead of queueing more, terminating it when it does not finish
   * closing within `closeTimeout`. `Infinity` disables the bound.
   * @defaultValue `1_048_576` (1 MiB)
   */
  maxBufferedBytes?: number;
  /**
   * What a `message` carries besides `type`, `from` and `channel`: reads the fields a client
   * sent into those relayed to the other connections (see `ChannelMessageReader`).
   * The default is the reference chat protocol: a `text` of 1–1000 characters (required)
   * and a `user` of 1–100 characters (optional; the `user` of the connection's last `join`
   * when absent), anything else dropped; a message that breaks these rules closes its
   * connection with 1008.
   * @defaultValue the chat fields: `{ text, user? }`
   */
  message?: ChannelMessageReader;
  /**
   * The hub channel that relayed `message`s cross processes on: each protocol delivers a
   * relay to its own connections at once and publishes it there, and the protocols of the
   * other processes sharing the hub's broker (a `RedisBroker`) deliver it to theirs. Clients
   * can neither subscribe nor send on this channel. `false` keeps relays in this process.
   * Only with a `hub`.
   * @defaultValue `'portico:relay'`
   */
  relayChannel?: string | false;
  /**
   * Where the end of a connection's credential is heard. A connection handed over with a
   * principal (see {@link ChannelConnectionContext}) is bound to its credential: when one of
   * its `credentialIds` is revoked or its `expiresAt` passes, it is dropped from every channel
   * and relay at once (nothing published afterwards reaches it) and closed with 1008
   * (`credential revoked` / `credential expired`). Give the service's cross-process bus.
   * @defaultValue `processRevocations()`, this process
   */
  revocations?: Revocations;
}
