import type { Dispatcher } from 'undici';
import { processRevocations, type Revocations } from '../auth/revocations.js';
import { assertKnownOptions, invalidOption } from '../internal/options.js';
import type { AddressGuardOptions } from './address-guard.js';
import { DEFAULT_RETRY_SCHEDULE } from './schedule.js';
import type { WebhookAttempt, WebhookDelivery, WebhookEndpoint, WebhookStore } from './store.js';

/**
 * What a sender reports to {@link WebhookSenderOptions.onEvent}: each attempt, each delivery
 * delivered or dead-lettered, each endpoint disabled. Never a secret.
 *
 * @example
 * ```ts
 * const onEvent = (e: WebhookSenderEvent) => {
 *   if (e.type === 'dead-letter') log.warn({ delivery: e.delivery.id }, 'webhook dead-lettered');
 * };
 * ```
 */
export type WebhookSenderEvent =
  | { type: 'attempt'; delivery: WebhookDelivery; attempt: WebhookAttempt }
  | { type: 'delivered'; delivery: WebhookDelivery }
  | { type: 'dead-letter'; delivery: WebhookDelivery }
  | { type: 'endpoint-disabled'; endpoint: Omit<WebhookEndpoint, 'secrets'> }
  | { type: 'endpoint-revoked'; endpoint: Omit<WebhookEndpoint, 'secrets'>; credentialId: string };

/**
 * Options of {@link createWebhookSender}.
 *
 * @example
 * ```ts
 * const options: WebhookSenderOptions = { schedule: [1, 10, 60], timeout: 5000, concurrency: 20 };
 * const sender = createWebhookSender(options);
 * ```
 */
export interface WebhookSenderOptions {
  /** Where endpoints and deliveries live. @defaultValue a new `MemoryWebhookStore` */
  store?: WebhookStore;
  /**
   * Seconds to wait before each retry; its length is the number of retries.
   * @defaultValue {@link DEFAULT_RETRY_SCHEDULE} (Standard Webhooks: 5 s … 24 h, ten attempts)
   */
  schedule?: readonly number[];
  /** Spread of each wait, as a fraction (± 20 %), so that failures do not retry in step. @defaultValue `0.2` */
  jitter?: number;
  /**
   * Milliseconds an attempt may take, from connecting to the answer. A claimed delivery is
   * leased for this plus 5 s: past that, another sender (process) takes it over.
   * @defaultValue `15000`
   */
  timeout?: number;
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
  /** How long the previous secret still signs after {@link WebhookSender.rotateSecret}. @defaultValue 24 h */
  rotationOverlapMs?: number;
  /** The `User-Agent` of the attempts. @defaultValue `portico-webhooks/1` */
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
  /** Longest wait between two looks at the store for due deliveries. @defaultValue `1000` */
  pollInterval?: number;
  /** The clock, in epoch milliseconds (tests inject one). @defaultValue `Date.now` */
  now?: () => number;
}

/** The options, checked, with their defaults. */
export type SenderSettings = Required<
  Omit<WebhookSenderOptions, 'store' | 'lookup' | 'dispatcher' | 'onEvent'>
> &
  Pick<WebhookSenderOptions, 'store' | 'lookup' | 'dispatcher' | 'onEvent'>;

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
  'pollInterval',
  'now',
  'maxEndpointsPerOwner',
  'revocations',
] as const;

function count(name: string, value: number, min: number): number {
  if (!Number.isSafeInteger(value) || value < min) {
    throw invalidOption(`createWebhookSender: \`${name}\` must be an integer ≥ ${min}`);
  }
  return value;
}

function positive(name: string, value: number): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw invalidOption(`createWebhookSender: \`${name}\` must be a positive number`);
  }
  return value;
}

/** Checks the options of `createWebhookSender` once and fills in the defaults. */
export function senderSettings(options: WebhookSenderOptions): SenderSettings {
  assertKnownOptions('createWebhookSender', options, KNOWN);
  const schedule = options.schedule ?? DEFAULT_RETRY_SCHEDULE;
  if (
    !Array.isArray(schedule) ||
    schedule.some((s) => typeof s !== 'number' || !Number.isFinite(s) || s < 0)
  ) {
    throw invalidOption('createWebhookSender: `schedule` must be an array of seconds ≥ 0');
  }
  const jitter = options.jitter ?? 0.2;
  if (typeof jitter !== 'number' || !(jitter >= 0 && jitter <= 1)) {
    throw invalidOption('createWebhookSender: `jitter` must be between 0 and 1');
  }
  const ordered = options.ordered === true;
  for (const name of ['onEvent', 'now', 'lookup'] as const) {
    if (options[name] !== undefined && typeof options[name] !== 'function') {
      throw invalidOption(`createWebhookSender: \`${name}\` must be a function`);
    }
  }
  const revocations = options.revocations ?? processRevocations();
  if (typeof revocations?.listen !== 'function') {
    throw invalidOption('createWebhookSender: `revocations` must be a revocation bus');
  }
  return {
    store: options.store,
    schedule: [...schedule],
    jitter,
    timeout: positive('timeout', options.timeout ?? 15_000),
    concurrency: count('concurrency', options.concurrency ?? 10, 1),
    perEndpointConcurrency: ordered
      ? 1
      : count('perEndpointConcurrency', options.perEndpointConcurrency ?? 2, 1),
    ordered,
    allowHttp: options.allowHttp === true,
    allowPrivate: options.allowPrivate === true,
    lookup: options.lookup,
    dispatcher: options.dispatcher,
    disableAfter: count('disableAfter', options.disableAfter ?? 5, 0),
    rotationOverlapMs: positive('rotationOverlapMs', options.rotationOverlapMs ?? 86_400_000),
    userAgent: options.userAgent ?? 'portico-webhooks/1',
    onEvent: options.onEvent,
    pollInterval: positive('pollInterval', options.pollInterval ?? 1000),
    now: options.now ?? Date.now,
    maxEndpointsPerOwner: count('maxEndpointsPerOwner', options.maxEndpointsPerOwner ?? 10, 1),
    revocations,
  };
}
