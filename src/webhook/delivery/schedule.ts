/**
 * The Standard Webhooks retry schedule, in milliseconds between attempts: after the first
 * attempt fails, wait 5 s, then 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h and 24 h — ten
 * attempts over about three days.
 *
 * @example
 * ```ts
 * createWebhookSender({ schedule: DEFAULT_RETRY_SCHEDULE.slice(0, 3) }); // four attempts
 * ```
 * @see {@link https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md#retry-schedule | Standard Webhooks: retry schedule}
 */
export const DEFAULT_RETRY_SCHEDULE: readonly number[] = Object.freeze([
  5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 50_400_000, 72_000_000, 86_400_000,
]);

/** The longest `Retry-After` honoured (a day); a receiver cannot park a delivery for longer. */
export const MAX_RETRY_AFTER_MS = 86_400_000;

/**
 * Reads a `Retry-After` header (RFC 9110 §10.2.3): delay seconds or an HTTP date. Returns
 * milliseconds from `now`, capped at a day; `undefined` when absent or
 * unreadable.
 *
 * @example
 * ```ts
 * parseRetryAfter('120', Date.now()); // 120000
 * parseRetryAfter('Wed, 21 Oct 2026 07:28:00 GMT', Date.now());
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-10.2.3 | RFC 9110 §10.2.3}
 */
export function parseRetryAfter(value: unknown, now: number): number | undefined {
  if (Array.isArray(value)) value = value[0];
  if (typeof value !== 'string') return undefined;
  const text = value.trim();
  let ms: number;
  if (/^\d{1,10}$/.test(text)) ms = Number(text) * 1000;
  else {
    const date = Date.parse(text);
    if (Number.isNaN(date) || !/[a-z]/i.test(text)) return undefined;
    ms = date - now;
  }
  return Math.min(Math.max(0, ms), MAX_RETRY_AFTER_MS);
}

/**
 * The wait before the next attempt, in milliseconds, after `attemptsMade` attempts failed:
 * `schedule[attemptsMade - 1]` milliseconds spread by ± `jitter` (so that deliveries failed
 * together do not retry together), and never less than the receiver's `Retry-After`.
 * `undefined` when the schedule is exhausted: the delivery is dead-lettered.
 *
 * @example
 * ```ts
 * retryDelay(1, DEFAULT_RETRY_SCHEDULE, { jitter: 0 }); // 5000
 * retryDelay(10, DEFAULT_RETRY_SCHEDULE); // undefined: ten attempts made
 * ```
 * @see {@link https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md#retry-schedule | Standard Webhooks: retry schedule}
 */
export function retryDelay(
  attemptsMade: number,
  schedule: readonly number[],
  options: { jitter?: number; retryAfterMs?: number | undefined; random?: () => number } = {},
): number | undefined {
  const wait = schedule[attemptsMade - 1];
  if (wait === undefined) return undefined;
  const { jitter = 0.2, retryAfterMs, random = Math.random } = options;
  const spread = 1 + (random() * 2 - 1) * jitter;
  const delay = Math.round(wait * spread);
  return retryAfterMs === undefined ? delay : Math.max(delay, retryAfterMs);
}

/** The longest wait a parsed schedule may hold between two attempts: a week. */
const MAX_SCHEDULED_WAIT_MS = 604_800_000;

/**
 * Reads a schedule such as `"5000,300000,1800000"` (whole milliseconds between attempts), as
 * the reference server's `WEBHOOK_RETRY_SCHEDULE`. Throws a `TypeError` for anything else.
 *
 * @example
 * ```ts
 * parseRetrySchedule('1000,1000,1000'); // [1000, 1000, 1000]: four attempts a second apart
 * ```
 * @see {@link https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md#retry-schedule | Standard Webhooks: retry schedule}
 */
export function parseRetrySchedule(text: string): number[] {
  const parts = text.split(',').map((part) => part.trim());
  const schedule = parts.map(Number);
  if (
    text.trim() === '' ||
    parts.some((part) => !/^\d{1,15}$/.test(part)) ||
    schedule.some((s) => !Number.isSafeInteger(s) || s > MAX_SCHEDULED_WAIT_MS)
  ) {
    throw new TypeError(
      `A retry schedule is a comma-separated list of whole milliseconds, each between 0 and ${MAX_SCHEDULED_WAIT_MS}.`,
    );
  }
  return schedule;
}
