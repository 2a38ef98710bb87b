import { randomBytes } from 'node:crypto';
import type { Duration } from '../core/duration.js';
import { PorticoError } from '../core/errors/errors.js';
import { type Logger, loggerOption } from '../core/logger.js';
import { assertKnownOptions, countOption } from '../internal/options.js';
import type {
  Broker,
  HistoryResult,
  HubDraft,
  HubListener,
  HubMessage,
  HubRedaction,
  Position,
  Unsubscribe,
} from '../realtime/broker.js';
import { deliverToListeners } from '../realtime/deliver.js';
import { type RedisCommands, redisStoreOptions } from './commands.js';
import type { RedisSubscriber } from './connection.js';
import { LuaScript, type RedisClient } from './script.js';

/**
 * Options of {@link RedisBroker}.
 *
 * @example
 * ```ts
 * const options: RedisBrokerOptions = { client: new Redis(process.env.REDIS_URL), historySize: 500 };
 * ```
 */
export interface RedisBrokerOptions {
  /**
   * The client for commands, ioredis or node-redis v5, one node or a cluster
   * ({@link RedisClient}: on a cluster each channel's keys share a hash slot, and messages go
   * by sharded pub/sub, `SPUBLISH` and `SSUBSCRIBE`, Redis 7 or later); it stays yours to close.
   * The broker makes its own subscriber connection from it.
   */
  client: RedisClient;
  /** Prefix of every key and pub/sub channel. @defaultValue `"portico:hub:"` */
  prefix?: string;
  /** The most events kept per channel for resuming clients (an integer ≥ 0). @defaultValue `1_000` */
  historySize?: number;
  /**
   * How long a command may take before it fails as if Redis were down, in milliseconds.
   * @defaultValue `2_000` (2 seconds)
   */
  timeoutMs?: Duration;
  /**
   * How many replicas a published message waits for (`WAIT`, at most `waitTimeoutMs`) before
   * `publish` resolves, so that a failover right after does not lose it from the history
   * (Redis replicates asynchronously). Best effort: a primary without a live replica takes
   * the message after the whole wait. 0 waits for none.
   * @defaultValue `0`
   */
  waitForReplicas?: number;
  /**
   * How long a publish waits for `waitForReplicas` replicas, in milliseconds.
   * @defaultValue `1_000` (1 second)
   */
  waitTimeoutMs?: Duration;
  /**
   * Where a listener that throws or rejects is logged (`error`, with the channel); delivery
   * to the other listeners goes on. A pino logger is passed as it is.
   * @defaultValue portico's default logger (errors on stderr)
   */
  logger?: Logger;
}

// The epoch of a channel: made by the first process that needs it, gone (and made anew) when
// Redis loses the channel's data, which tells resuming clients that their positions are void.
const EPOCH = `local e = redis.call('GET', KEYS[1])
if not e then redis.call('SET', KEYS[1], ARGV[1]); e = ARGV[1] end
`;

// KEYS: epoch, seq, log (one slot); ARGV: new epoch, pub/sub channel, channel JSON, event JSON,
// data JSON, time, history size, publish command (PUBLISH, or SPUBLISH on a cluster)
const PUBLISH = new LuaScript(`${EPOCH}
local offset = redis.call('INCR', KEYS[2])
local message = '{"channel":' .. ARGV[3] .. ',"offset":' .. offset .. ',"epoch":"' .. e ..
  '","event":' .. ARGV[4] .. ',"data":' .. ARGV[5] .. ',"time":' .. ARGV[6] .. '}'
local size = tonumber(ARGV[7])
if size > 0 then
  redis.call('RPUSH', KEYS[3], message)
  redis.call('LTRIM', KEYS[3], -size, -1)
end
redis.call(ARGV[8], ARGV[2], message)
return message
`);

// KEYS: epoch, seq, log; ARGV: new epoch, whether to return the log
const READ = new LuaScript(`${EPOCH}
local seq = tonumber(redis.call('GET', KEYS[2]) or '0')
if ARGV[2] == '1' then return { e, seq, redis.call('LRANGE', KEYS[3], 0, -1) } end
return { e, seq }
`);

// Replaces the held entry of one offset, and only while it is still the one read (a
// concurrent redaction wins; the caller then reads it again): found by its text (LPOS), else
// by its offset (the start every entry of the channel has: channel then offset) to tell a
// changed entry (0) from one trimmed away (-1). Atomic against publishes and trimming, which
// move list indexes: no index is carried over from a read.
// KEYS: log; ARGV: the entry's start `{"channel":…,"offset":N,`, its text as read, new text
const REDACT = new LuaScript(`local i = redis.call('LPOS', KEYS[1], ARGV[2])
if i then
  redis.call('LSET', KEYS[1], i, ARGV[3])
  return 1
end
for _, entry in ipairs(redis.call('LRANGE', KEYS[1], 0, -1)) do
  if string.sub(entry, 1, #ARGV[1]) == ARGV[1] then return 0 end
end
return -1
`);

/** How often one entry is read again when a concurrent redaction changed it first. */
const REDACT_ATTEMPTS = 5;

/** The text of a message as the publish script writes it (same fields, same order). */
function encode(message: HubMessage, draft: HubDraft): string {
  return `{"channel":${JSON.stringify(message.channel)},"offset":${message.offset},"epoch":${JSON.stringify(
    message.epoch,
  )},"event":${JSON.stringify(draft.event)},"data":${JSON.stringify(draft.data) ?? 'null'},"time":${message.time}}`;
}

/** The start every held entry of `channel` at `offset` has. */
const entryStart = (channel: string, offset: number) =>
  `{"channel":${JSON.stringify(channel)},"offset":${offset},`;

const parse = (text: string): HubMessage => Object.freeze(JSON.parse(text) as HubMessage);

const OWNER = 'new RedisBroker()';
const KNOWN_OPTIONS = [
  'client',
  'prefix',
  'historySize',
  'timeoutMs',
  'waitForReplicas',
  'waitTimeoutMs',
  'logger',
] as const satisfies readonly (keyof RedisBrokerOptions)[];

/**
 * A {@link Broker} over Redis, so that several processes act as one hub: offsets assigned
 * by one Lua script per publish (per channel, in order, across processes), delivery through
 * Redis pub/sub (one subscriber connection per broker, one Redis subscription per channel
 * however many local listeners), and a bounded history per channel in a Redis list, so that a
 * client resumes (`Last-Event-ID`, `subscribe` with `since`) whichever process it reconnects
 * to. The epoch lives in Redis too: when Redis loses its data, positions from before are
 * recognised as another epoch and clients are told they are too far behind. `redact()` rewrites
 * held entries in place, each in a Lua script that finds it by its offset, so that it is safe
 * against concurrent publishes and trimming (Redis 6.0.6 or later, for `LPOS`). Each process
 * delivers a message once: one arriving again with an offset already delivered in its epoch
 * (an overlapping subscription while the client library moves it) is dropped.
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis';
 * const hub = createHub({ broker: new RedisBroker({ client: new Redis(process.env.REDIS_URL) }) });
 * ```
 */
export class RedisBroker implements Broker {
  readonly #redis: RedisCommands;
  readonly #prefix: string;
  readonly #size: number;
  readonly #logger: Logger;
  readonly #listeners = new Map<string, Set<HubListener>>();
  /** Pending or done subscriptions, per pub/sub channel. */
  readonly #subscribed = new Map<string, Promise<unknown>>();
  /**
   * The last message delivered per pub/sub channel: one arriving again (a subscription that
   * overlaps another while the client library moves it between nodes) is not delivered twice.
   */
  readonly #delivered = new Map<string, Position>();
  #subscriber: RedisSubscriber | undefined;
  #closed = false;

  constructor(options: RedisBrokerOptions) {
    assertKnownOptions(OWNER, options, KNOWN_OPTIONS);
    const { commands, prefix } = redisStoreOptions(OWNER, options, {
      prefix: 'portico:hub:',
      timeoutMs: 2_000,
    });
    this.#redis = commands;
    this.#prefix = prefix;
    this.#size = countOption(OWNER, 'historySize', options.historySize, 1_000, { min: 0 });
    this.#logger = loggerOption(OWNER, options.logger);
  }

  /** The pub/sub channel of `channel`, a hash tag keeping its keys on one slot. */
  #topic(channel: string): string {
    return `${this.#prefix}{ch:${channel}}`;
  }

  #keys(channel: string): string[] {
    const base = this.#topic(channel);
    return [`${base}:epoch`, `${base}:seq`, `${base}:log`];
  }

  async publish(channel: string, draft: HubDraft): Promise<HubMessage> {
    this.#assertOpen();
    const data = JSON.stringify(draft.data) ?? 'null';
    const reply = await this.#redis.replicated(PUBLISH, this.#keys(channel), [
      newEpoch(),
      this.#topic(channel),
      JSON.stringify(channel),
      JSON.stringify(draft.event),
      data,
      Date.now(),
      this.#size,
      this.#redis.connection.cluster ? 'SPUBLISH' : 'PUBLISH',
    ]);
    return parse(String(reply));
  }

  async subscribe(channel: string, listener: HubListener): Promise<Unsubscribe> {
    this.#assertOpen();
    const topic = this.#topic(channel);
    let listeners = this.#listeners.get(topic);
    if (listeners === undefined) {
      listeners = new Set();
      this.#listeners.set(topic, listeners);
    }
    const entry: HubListener = listeners.has(listener) ? (m) => listener(m) : listener;
    listeners.add(entry);
    let pending = this.#subscribed.get(topic);
    if (pending === undefined) {
      pending = this.#subscriberConnection().subscribe(topic);
      this.#subscribed.set(topic, pending);
      pending.catch(() => this.#subscribed.delete(topic));
    }
    try {
      await pending;
    } catch (error) {
      listeners.delete(entry);
      throw error;
    }
    return () => {
      const set = this.#listeners.get(topic);
      if (set === undefined || !set.delete(entry) || set.size > 0) return;
      this.#listeners.delete(topic);
      this.#subscribed.delete(topic);
      this.#delivered.delete(topic);
      this.#subscriber?.unsubscribe(topic).catch(() => {});
    };
  }

  async history(channel: string, since: Position): Promise<HistoryResult> {
    this.#assertOpen();
    const [epoch, seq, log] = (await this.#redis.script(READ, this.#keys(channel), [
      newEpoch(),
      '1',
    ])) as [string, number, string[]];
    const held = log.map(parse);
    const oldest = seq - held.length + 1;
    const offset = since.offset;
    if (
      since.epoch === epoch &&
      Number.isSafeInteger(offset) &&
      offset >= oldest - 1 &&
      offset <= seq
    ) {
      return { events: held.slice(offset - oldest + 1), recovered: true };
    }
    return { events: held, recovered: false };
  }

  /**
   * Rewrites held entries in place: each is found by its offset inside a Lua script and
   * replaced only if still as read, so a concurrent publish, trim or redaction never makes
   * it overwrite another entry.
   */
  async redact(channel: string, replace: HubRedaction): Promise<number> {
    this.#assertOpen();
    let replaced = 0;
    for (const text of await this.#log(channel)) {
      if (await this.#redactEntry(channel, text, replace)) replaced += 1;
    }
    return replaced;
  }

  async #redactEntry(channel: string, read: string, replace: HubRedaction): Promise<boolean> {
    let text: string | undefined = read;
    for (let attempt = 0; attempt < REDACT_ATTEMPTS && text !== undefined; attempt++) {
      const message = parse(text);
      const draft = replace(message);
      if (draft === undefined) return false;
      const start = entryStart(channel, message.offset);
      const done = Number(
        await this.#redis.script(
          REDACT,
          [this.#keys(channel)[2]!],
          [start, text, encode(message, draft)],
        ),
      );
      if (done !== 0) return done === 1;
      text = (await this.#log(channel)).find((entry) => entry.startsWith(start));
    }
    if (text === undefined) return false;
    throw new PorticoError(
      'RedisBroker: a history entry kept changing while it was being redacted.',
      'ERR_HUB_REDACT_CONFLICT',
    );
  }

  async #log(channel: string): Promise<string[]> {
    const [, , log] = (await this.#redis.script(READ, this.#keys(channel), [newEpoch(), '1'])) as [
      string,
      number,
      string[],
    ];
    return log;
  }

  async position(channel: string): Promise<Position> {
    this.#assertOpen();
    const [epoch, offset] = (await this.#redis.script(READ, this.#keys(channel), [
      newEpoch(),
      '0',
    ])) as [string, number];
    return { epoch, offset };
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#listeners.clear();
    this.#subscribed.clear();
    this.#delivered.clear();
    const subscriber = this.#subscriber;
    this.#subscriber = undefined;
    await subscriber?.close();
  }

  #subscriberConnection(): RedisSubscriber {
    this.#subscriber ??= this.#redis.connection.subscriber((topic, text) =>
      this.#deliver(topic, text),
    );
    return this.#subscriber;
  }

  #deliver(topic: string, text: string): void {
    const listeners = this.#listeners.get(topic);
    if (listeners === undefined || listeners.size === 0) return;
    let message: HubMessage;
    try {
      message = parse(text);
    } catch {
      return; // not one of ours
    }
    const last = this.#delivered.get(topic);
    if (last !== undefined && last.epoch === message.epoch && message.offset <= last.offset) return;
    this.#delivered.set(topic, { epoch: message.epoch, offset: message.offset });
    deliverToListeners(listeners, message, this.#logger, 'redis');
  }

  #assertOpen(): void {
    if (this.#closed) throw new PorticoError('The broker is closed.', 'ERR_HUB_CLOSED');
  }
}

function newEpoch(): string {
  return randomBytes(12).toString('base64url');
}
