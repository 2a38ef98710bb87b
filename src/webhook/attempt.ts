import { type Dispatcher, request } from 'undici';
import { WebhookAddressError } from './errors.js';
import { parseRetryAfter } from './schedule.js';
import { webhookHeaders } from './signature.js';
import type { WebhookAttempt, WebhookDelivery } from './store.js';

/**
 * What one attempt leads to: `delivered` (2xx), `retry` (network error, timeout, 3xx, 408,
 * 429, 5xx, a host name that did not resolve), `gone` (410: the endpoint is disabled), `final`
 * (any other answer, or an address the guard refused).
 */
export type AttemptVerdict = 'delivered' | 'retry' | 'gone' | 'final';

/** One attempt's record and verdict. */
export interface AttemptOutcome {
  attempt: WebhookAttempt;
  verdict: AttemptVerdict;
  /** The receiver's `Retry-After`, in milliseconds, when it sent one. */
  retryAfterMs?: number | undefined;
}

/** What {@link attemptDelivery} needs beyond the delivery. */
export interface AttemptSettings {
  dispatcher: Dispatcher;
  timeout: number;
  userAgent: string;
  now: () => number;
  /** Cuts the answers' bodies still being read at their attempt's end. */
  bodies: BodyWatch;
}

/** What a {@link BodyWatch} can cut. */
interface Cuttable {
  destroy(): unknown;
}

/**
 * Cuts answer bodies still being read when their attempt's time is up, with one timer for
 * all of a sender's attempts (a timer each costs more than the rest of an attempt's own
 * bookkeeping). It ticks every quarter of the timeout, at most every second, while any body
 * is watched, so a body is cut at most that late.
 */
export class BodyWatch {
  readonly #deadlines = new Map<Cuttable, number>();
  readonly #everyMs: number;
  #timer: NodeJS.Timeout | undefined;

  constructor(timeout: number) {
    this.#everyMs = Math.max(1, Math.min(1000, Math.floor(timeout / 4)));
  }

  /** Watches `body` until `unwatch`, cutting it once `deadline` (`performance.now()`) passes. */
  watch(body: Cuttable, deadline: number): void {
    this.#deadlines.set(body, deadline);
    if (this.#timer === undefined) {
      this.#timer = setInterval(() => this.#check(), this.#everyMs);
      this.#timer.unref();
    }
  }

  unwatch(body: Cuttable): void {
    this.#deadlines.delete(body);
  }

  #check(): void {
    const now = performance.now();
    for (const [body, deadline] of this.#deadlines) {
      if (deadline > now) continue;
      this.#deadlines.delete(body);
      body.destroy();
    }
    if (this.#deadlines.size === 0) {
      clearInterval(this.#timer);
      this.#timer = undefined;
    }
  }
}

/** The refusal of the address guard somewhere in `error`'s causes, if any. */
function addressRefusal(error: unknown): WebhookAddressError | undefined {
  for (let e = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e instanceof WebhookAddressError) return e;
  }
  return undefined;
}

/** A short, secret-free description of a failure without an answer. */
function describe(error: unknown): string {
  const refused = addressRefusal(error);
  if (refused) return `address refused (${refused.reason})`;
  if (error instanceof Error) {
    if (error.name === 'TimeoutError' || error.name === 'AbortError') return 'timeout';
    const code = (error as Error & { code?: unknown }).code;
    if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') return 'timeout';
    if (typeof code === 'string') return code;
    const causeCode = (error.cause as { code?: unknown } | undefined)?.code;
    if (typeof causeCode === 'string') return causeCode;
  }
  return 'network error';
}

function verdictOf(status: number): AttemptVerdict {
  if (status >= 200 && status < 300) return 'delivered';
  if (status === 410) return 'gone';
  if (status >= 300 && status < 400) return 'retry';
  if (status === 408 || status === 429 || status >= 500) return 'retry';
  return 'final';
}

/**
 * POSTs one delivery to its endpoint, signed for this attempt (`webhook-timestamp` is the
 * attempt's time, so that a retry hours later still passes the receiver's tolerance), within
 * `timeout` for the whole exchange (a body still coming then is cut on the next tick of the
 * {@link BodyWatch}). Redirects are not followed. Never throws.
 */
export async function attemptDelivery(
  delivery: WebhookDelivery,
  url: string,
  secrets: readonly string[],
  settings: AttemptSettings,
): Promise<AttemptOutcome> {
  const at = settings.now();
  const started = performance.now();
  try {
    const signed = webhookHeaders(secrets, {
      id: delivery.id,
      timestamp: Math.floor(at / 1000),
      body: delivery.body,
    });
    const response = await request(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'user-agent': settings.userAgent,
        'webhook-id': signed['webhook-id'],
        'webhook-timestamp': signed['webhook-timestamp'],
        'webhook-signature': signed['webhook-signature'],
      },
      body: delivery.body,
      dispatcher: settings.dispatcher,
      // no AbortSignal per attempt: the agent bounds connecting, these the answer
      headersTimeout: settings.timeout,
      bodyTimeout: settings.timeout,
    });
    // The answer's body is not needed: read a little of it, so the connection is reused, but
    // never much past the attempt's time (undici's bodyTimeout restarts with every chunk, and
    // a dribbling receiver would otherwise outlast the lease). The status has decided already.
    const body = response.body;
    settings.bodies.watch(body, started + settings.timeout);
    await body.dump({ limit: 64 * 1024 }).catch(() => {});
    settings.bodies.unwatch(body);
    const status = response.statusCode;
    const verdict = verdictOf(status);
    return {
      attempt: { at, status, durationMs: Math.round(performance.now() - started) },
      verdict,
      retryAfterMs:
        verdict === 'retry'
          ? parseRetryAfter(response.headers['retry-after'], settings.now())
          : undefined,
    };
  } catch (error) {
    return {
      attempt: { at, durationMs: Math.round(performance.now() - started), error: describe(error) },
      // a refused address is final, except a name that did not resolve (DNS may come back)
      verdict:
        (addressRefusal(error)?.reason ?? 'unresolvable') === 'unresolvable' ? 'retry' : 'final',
    };
  }
}
