import type { Dispatcher } from 'undici';
import { WebhookAddressError } from '../errors.js';
import { webhookHeaders } from '../signature.js';
import type { WebhookAttempt, WebhookDelivery } from '../store.js';
import { type DeadlineWatch, post } from './post.js';
import { parseRetryAfter } from './schedule.js';

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
  /** The dispatcher, or what makes it on the first attempt. */
  dispatcher: Dispatcher | (() => Dispatcher | Promise<Dispatcher>);
  timeout: number;
  userAgent: string;
  now: () => number;
  /** Cuts the exchanges still under way at their attempt's end. */
  deadlines: DeadlineWatch;
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
 * `timeout` for the whole exchange (one still under way then is cut on the next tick of the
 * {@link DeadlineWatch}). Redirects are not followed. Never throws.
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
    const answer = await post(
      url,
      {
        'content-type': 'application/json',
        'user-agent': settings.userAgent,
        'webhook-id': signed['webhook-id'],
        'webhook-timestamp': signed['webhook-timestamp'],
        'webhook-signature': signed['webhook-signature'],
      },
      delivery.body,
      {
        dispatcher:
          typeof settings.dispatcher === 'function' ? settings.dispatcher() : settings.dispatcher,
        timeout: settings.timeout,
        // The answer's body is not needed: a little of it is read, so the connection is
        // reused, but never much past the attempt's time (undici's bodyTimeout restarts with
        // every chunk, and a dribbling receiver would otherwise outlast the lease): the
        // deadline watch cuts it.
        bodyLimit: 64 * 1024,
        watch: { deadlines: settings.deadlines, deadline: started + settings.timeout },
      },
    );
    const verdict = verdictOf(answer.status);
    return {
      attempt: { at, status: answer.status, durationMs: Math.round(performance.now() - started) },
      verdict,
      retryAfterMs:
        verdict === 'retry' ? parseRetryAfter(answer.retryAfter, settings.now()) : undefined,
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
