import type { WebSocket } from 'ws';
import type { Principal } from '../auth/principal.js';
import type { Revocations } from '../auth/revocations.js';
import { assertKnownOptions, invalidOption } from '../internal/options.js';
import type { Hub } from '../realtime/hub.js';
import { revocationsOption } from './credential-binding.js';

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
 * const rateLimit: ChannelRateLimit = { messages: 20, intervalMs: 1000 };
 * ```
 */
export interface ChannelRateLimit {
  /** How many messages a connection may send in a burst, and per `intervalMs`. */
  messages: number;
  /** The refill period, in milliseconds. */
  intervalMs: number;
}

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
  /** Milliseconds between protocol-level pings; a peer that missed the last pong is ended. 0 disables. @defaultValue 30000 */
  heartbeat?: number;
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
  /** How long `close()` waits for clients to answer the 1001 before terminating them. @defaultValue 5000 */
  closeTimeout?: number;
  /**
   * Called with unexpected errors, which close the connection with 1011.
   * @defaultValue logs the stack to `console.error`
   */
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

/** The built-in message types, which `extend` cannot replace. */
export const BUILT_IN = new Set(['join', 'ping', 'subscribe', 'unsubscribe', 'message']);

/** {@link ChannelProtocolOptions} checked, with their defaults. */
export interface ChannelSettings {
  hub: Hub | undefined;
  heartbeat: number;
  extend: Readonly<Record<string, ChannelMessageHandler>>;
  authorize: ChannelAuthorizer | undefined;
  closeTimeout: number;
  onError: (error: unknown) => void;
  rateLimit: ChannelRateLimit | false;
  maxBufferedBytes: number;
  relayChannel: string | false;
  revocations: Revocations | undefined;
}

const OWNER = 'createChannelProtocol()';
const KNOWN_OPTIONS = [
  'hub',
  'heartbeat',
  'extend',
  'authorize',
  'closeTimeout',
  'onError',
  'rateLimit',
  'maxBufferedBytes',
  'relayChannel',
  'revocations',
] as const;

const defaultOnError = (error: unknown) => {
  const stack = error instanceof Error ? (error.stack ?? error.message) : String(error);
  console.error(`[portico] ws channel: ${stack}`);
};

function milliseconds(name: string, value: number): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw invalidOption(`${OWNER}: \`${name}\` must be a number of milliseconds ≥ 0`);
  }
  return value;
}

/** Checks the options of {@link createChannelProtocol} and fills in the defaults. */
export function channelSettings(options: ChannelProtocolOptions): ChannelSettings {
  assertKnownOptions('createChannelProtocol', options, KNOWN_OPTIONS);
  const { hub, extend = {}, authorize, onError = defaultOnError } = options;
  const rateLimit = options.rateLimit ?? { messages: 100, intervalMs: 10_000 };
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
  const maxBufferedBytes = options.maxBufferedBytes ?? 1024 * 1024;
  if (typeof maxBufferedBytes !== 'number' || !(maxBufferedBytes > 0)) {
    throw invalidOption(`${OWNER}: \`maxBufferedBytes\` must be a number of bytes > 0`);
  }
  if (authorize !== undefined && typeof authorize !== 'function') {
    throw invalidOption(`${OWNER}: \`authorize\` must be a function`);
  }
  if (typeof onError !== 'function')
    throw invalidOption(`${OWNER}: \`onError\` must be a function`);
  for (const [type, handler] of Object.entries(extend)) {
    if (BUILT_IN.has(type)) throw invalidOption(`${OWNER}: "${type}" is a built-in message type`);
    if (typeof handler !== 'function') {
      throw invalidOption(`${OWNER}: extend["${type}"] must be a function`);
    }
  }
  const relayChannel = options.relayChannel ?? 'portico:relay';
  if (relayChannel !== false && (typeof relayChannel !== 'string' || relayChannel === '')) {
    throw invalidOption(`${OWNER}: \`relayChannel\` must be a channel name or false`);
  }
  return {
    hub,
    relayChannel,
    revocations: revocationsOption(OWNER, options.revocations),
    heartbeat: milliseconds('heartbeat', options.heartbeat ?? 30_000),
    extend,
    authorize,
    closeTimeout: milliseconds('closeTimeout', options.closeTimeout ?? 5000),
    onError,
    rateLimit,
    maxBufferedBytes,
  };
}
