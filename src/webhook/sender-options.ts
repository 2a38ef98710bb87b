import type { Dispatcher } from 'undici';
import { processRevocations, type Revocations } from '../auth/revocations.js';
import type { Duration } from '../core/duration.js';
import { type Logger, loggerOption } from '../core/logger.js';
import { hasLineBreak, isFieldValue } from '../internal/grammar.js';
import {
  assertKnownOptions,
  booleanOption,
  countOption,
  durationOption,
  functionOption,
  invalidOption,
} from '../internal/options.js';
import type { AddressGuardOptions } from './address-guard/guard.js';
import type { WebhookSenderEvent } from './delivery/observe.js';
import { DEFAULT_RETRY_SCHEDULE } from './delivery/schedule.js';
import type { WebhookStore } from './store.js';

export type { WebhookSenderEvent };

/**
 * Options of {@link createWebhookSender}. Every duration is in milliseconds.
 *
 * @example
 * ```ts
 * const options: WebhookSenderOptions = { schedule: [1_000, 10_000, 60_000], timeout: 5_000, concurrency: 20 };
 * const sender = createWebhookSender(options);
 * ```
 */
export interface WebhookSenderOptions {
  /** Where endpoints and deliveries live. @defaultValue a new `MemoryWebhookStore` */
  store?: WebhookStore;
  /**
   * The waits before each retry, in milliseconds (whole, 0 or more); its length is the number
   * of retries.
   * @defaultValue {@link DEFAULT_RETRY_SCHEDULE} (Standard Webhooks: `5_000` (5 seconds) …
   * `86_400_000` (24 hours), ten attempts)
   */
  schedule?: readonly Duration[];
  /** Spread of each wait, as a fraction (± 20 %), so that failures do not retry in step. @defaultValue `0.2` */
  jitter?: number;
  /**
   * How long an attempt may take, in milliseconds, from connecting to the answer. A claimed
   * delivery is leased for this plus 5 seconds: past that, another sender (process) takes it
   * over.
   * @defaultValue `15_000` (15 seconds)
   */
  timeout?: Duration;
  /** Attempts in flight at once, over every endpoint. @defaultValue `10` */
  concurrency?: number;
  /** Attempts in flight at once per endpoint. @defaultValue `2` (`1` when `ordered`) */
  perEndpointConcurrency?: number;
  /**
   * Deliver each endpoint's messages in the order they were sent: a delivery waits until the
   * one before it is delivered or dead-lettered.
   * @defaultValue `false`
   */
  ordered?: boolean;
  /** Accept `http:` endpoints (local use only). @defaultValue `false` */
  allowHttp?: boolean;
  /** Accept loopback and private addresses (local use only: this opens SSRF). @defaultValue `false` */
  allowPrivate?: boolean;
  /** How host names are resolved (tests inject a stub). @defaultValue DNS */
  lookup?: AddressGuardOptions['lookup'];
  /**
   * The undici dispatcher of the attempts. Giving one replaces the address guard: it is then
   * yours to make safe. @defaultValue a keep-alive agent that checks each address it connects to
   */
  dispatcher?: Dispatcher;
  /** Dead letters in a row after which an endpoint is disabled; `0` never. @defaultValue `5` */
  disableAfter?: number;
  /**
   * How long the previous secret still signs after {@link WebhookSender.rotateSecret}, in
   * milliseconds.
   * @defaultValue `86_400_000` (24 hours)
   */
  rotationOverlapMs?: Duration;
  /** The `User-Agent` of the attempts (no line break). @defaultValue `portico-webhooks/1` */
  userAgent?: string;
  /**
   * The most endpoints one `owner` may register; one more is refused with a 422 problem.
   * Endpoints without an owner are not counted.
   * @defaultValue `10`
   */
  maxEndpointsPerOwner?: number;
  /**
   * Where credential revocations are heard: an endpoint registered with `credentialIds` is
   * removed, with its pending deliveries, as soon as one of them is revoked. Give the bus
   * your stores announce on (over a shared transport when several processes send).
   * @defaultValue {@link processRevocations}
   */
  revocations?: Revocations;
  /**
   * Told about attempts, deliveries, dead letters, disabled endpoints and endpoints removed
   * because their credential was revoked. @defaultValue none
   */
  onEvent?: (event: WebhookSenderEvent) => void;
  /**
   * Where the sender logs: `warn` for a failed attempt, a dead letter and a disabled endpoint
   * (endpoint and delivery ids, status, never the URL's query or a secret), `error` when the
   * store fails under it. A pino logger is passed as it is.
   * @defaultValue portico's default logger (errors on stderr)
   */
  logger?: Logger;
  /**
   * The longest wait between two looks at the store for due deliveries, in milliseconds.
   * @defaultValue `1_000` (1 second)
   */
  pollInterval?: Duration;
  /** The clock, in epoch milliseconds (tests inject one). @defaultValue `Date.now` */
  now?: () => number;
}

/** The durations of the options, as milliseconds once checked. */
type SenderDurations = 'schedule' | 'timeout' | 'rotationOverlapMs' | 'pollInterval';

/** The options, checked, with their defaults (durations in milliseconds). */
export type SenderSettings = Required<
  Omit<WebhookSenderOptions, 'store' | 'lookup' | 'dispatcher' | 'onEvent' | SenderDurations>
> &
  Pick<WebhookSenderOptions, 'store' | 'lookup' | 'dispatcher' | 'onEvent'> & {
    schedule: readonly number[];
    timeout: number;
    rotationOverlapMs: number;
    pollInterval: number;
  };

const OWNER = 'createWebhookSender()';

const KNOWN = [
  'store',
  'schedule',
  'jitter',
  'timeout',
  'concurrency',
  'perEndpointConcurrency',
  'ordered',
  'allowHttp',
  'allowPrivate',
  'lookup',
  'dispatcher',
  'disableAfter',
  'rotationOverlapMs',
  'userAgent',
  'onEvent',
  'logger',
  'pollInterval',
  'now',
  'maxEndpointsPerOwner',
  'revocations',
] as const satisfies readonly (keyof WebhookSenderOptions)[];

/** The retry schedule: whole milliseconds, 0 or more, each. */
function scheduleOption(value: unknown): number[] {
  if (value === undefined) return [...DEFAULT_RETRY_SCHEDULE];
  if (!Array.isArray(value)) {
    throw invalidOption(`${OWNER}: \`schedule\` must be an array of milliseconds, 0 or more`);
  }
  return value.map((wait, i) => durationOption(OWNER, `schedule[${i}]`, wait, 0));
}

function jitterOption(value: unknown): number {
  if (value === undefined) return 0.2;
  if (typeof value !== 'number' || !(value >= 0 && value <= 1)) {
    throw invalidOption(`${OWNER}: \`jitter\` must be between 0 and 1`);
  }
  return value;
}

function userAgentOption(value: unknown): string {
  if (value === undefined) return 'portico-webhooks/1';
  if (typeof value !== 'string' || hasLineBreak(value)) {
    throw invalidOption(`${OWNER}: \`userAgent\` must be a string without a line break`);
  }
  if (!isFieldValue(value)) {
    throw invalidOption(
      `${OWNER}: \`userAgent\` must be a header value (tab, space, visible ASCII, 0x80–0xFF): no control character`,
    );
  }
  return value;
}

/** Checks the options of `createWebhookSender` once and fills in the defaults. */
export function senderSettings(options: WebhookSenderOptions): SenderSettings {
  assertKnownOptions(OWNER, options, KNOWN);
  const ordered = booleanOption(OWNER, 'ordered', options.ordered, false);
  const revocations = options.revocations ?? processRevocations();
  if (typeof revocations?.listen !== 'function') {
    throw invalidOption(`${OWNER}: \`revocations\` must be a revocation bus`);
  }
  return {
    store: options.store,
    schedule: scheduleOption(options.schedule),
    jitter: jitterOption(options.jitter),
    timeout: durationOption(OWNER, 'timeout', options.timeout, 15_000, { min: 1 }),
    concurrency: countOption(OWNER, 'concurrency', options.concurrency, 10),
    perEndpointConcurrency: ordered
      ? 1
      : countOption(OWNER, 'perEndpointConcurrency', options.perEndpointConcurrency, 2),
    ordered,
    allowHttp: booleanOption(OWNER, 'allowHttp', options.allowHttp, false),
    allowPrivate: booleanOption(OWNER, 'allowPrivate', options.allowPrivate, false),
    lookup: functionOption(OWNER, 'lookup', options.lookup),
    dispatcher: options.dispatcher,
    disableAfter: countOption(OWNER, 'disableAfter', options.disableAfter, 5, { min: 0 }),
    rotationOverlapMs: durationOption(
      OWNER,
      'rotationOverlapMs',
      options.rotationOverlapMs,
      86_400_000,
      { min: 1 },
    ),
    userAgent: userAgentOption(options.userAgent),
    onEvent: functionOption(OWNER, 'onEvent', options.onEvent),
    logger: loggerOption(OWNER, options.logger),
    pollInterval: durationOption(OWNER, 'pollInterval', options.pollInterval, 1_000, {
      min: 1,
      floor: 100,
    }),
    now: functionOption(OWNER, 'now', options.now) ?? Date.now,
    maxEndpointsPerOwner: countOption(
      OWNER,
      'maxEndpointsPerOwner',
      options.maxEndpointsPerOwner,
      10,
    ),
    revocations,
  };
}
