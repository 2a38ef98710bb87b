// One delivery attempt and the POST under it, driven through a stand-in dispatcher that plays
// undici's handler protocol (onRequestStart, onResponseStart, onResponseData, onResponseEnd,
// onResponseError): what each failure is recorded as, which verdict each status gets, the
// body limit, and the deadline watch that cuts exchanges (on fake timers, not the real clock).
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type AttemptSettings, attemptDelivery } from '../../../src/webhook/delivery/attempt.js';
import { DeadlineWatch, type PostHandle, post } from '../../../src/webhook/delivery/post.js';
import { WebhookAddressError } from '../../../src/webhook/errors.js';
import { generateWebhookSecret } from '../../../src/webhook/secret.js';
import type { WebhookDelivery } from '../../../src/webhook/store.js';

type Handler = {
  onRequestStart(controller: Controller): void;
  onResponseStart(controller: Controller, status: number, headers: object): void;
  onResponseData(controller: Controller, chunk: Buffer): void;
  onResponseEnd(controller: Controller): void;
  onResponseError(controller: Controller | undefined, error: unknown): void;
};
type Controller = { abort(reason: unknown): void; aborted: unknown[] };

/** A dispatcher that runs `script` on each dispatch, with a controller that records aborts. */
function scripted(script: (handler: Handler, controller: Controller, options: object) => void) {
  const dispatched: Record<string, unknown>[] = [];
  const dispatcher = {
    dispatch(options: Record<string, unknown>, handler: Handler) {
      dispatched.push(options);
      const controller: Controller = {
        aborted: [],
        abort(reason) {
          this.aborted.push(reason);
        },
      };
      script(handler, controller, options);
      return true;
    },
  };
  return { dispatcher: dispatcher as never, dispatched };
}

/** Answers `status` (with `headers`) and ends. */
const answering = (status: number, headers: object = {}) =>
  scripted((h, c) => {
    h.onRequestStart(c);
    h.onResponseStart(c, status, headers);
    h.onResponseEnd(c);
  });

/** Fails before any answer with `error`. */
const failing = (error: unknown) =>
  scripted((h, c) => {
    h.onRequestStart(c);
    h.onResponseError(c, error);
  });

const SECRET = generateWebhookSecret();
const delivery = (): WebhookDelivery => ({
  id: 'msg_1',
  endpointId: 'ep_1',
  event: 'ping',
  body: '{}',
  state: 'pending',
  attempts: [],
  nextAttemptAt: 0,
  createdAt: 0,
});

const watches: DeadlineWatch[] = [];
function settings(dispatcher: AttemptSettings['dispatcher'], now = () => 1_700_000_000_000) {
  const deadlines = new DeadlineWatch(15_000);
  watches.push(deadlines);
  return { dispatcher, timeout: 15_000, userAgent: 'test/1', now, deadlines };
}

const attempt = (dispatcher: AttemptSettings['dispatcher']) =>
  attemptDelivery(delivery(), 'https://hooks.example/in?x=1', [SECRET], settings(dispatcher));

afterEach(() => {
  vi.useRealTimers();
});

describe('attemptDelivery: the verdict of each answer', () => {
  it.each([
    [200, 'delivered'],
    [204, 'delivered'],
    [299, 'delivered'],
    [300, 'retry'],
    [302, 'retry'],
    [399, 'retry'],
    [400, 'final'],
    [404, 'final'],
    [408, 'retry'],
    [410, 'gone'],
    [429, 'retry'],
    [499, 'final'],
    [500, 'retry'],
    [503, 'retry'],
  ] as const)('%i is %s', async (status, verdict) => {
    const before = performance.now();
    const outcome = await attempt(answering(status).dispatcher);
    const took = performance.now() - before;
    expect(outcome.verdict).toBe(verdict);
    expect(outcome.attempt).toEqual({
      at: 1_700_000_000_000,
      status,
      durationMs: expect.any(Number),
    });
    expect(outcome.attempt.durationMs).toBeGreaterThanOrEqual(0);
    expect(outcome.attempt.durationMs).toBeLessThanOrEqual(Math.ceil(took));
  });

  it('reads Retry-After on a retry only', async () => {
    const retry = await attempt(answering(503, { 'retry-after': '7' }).dispatcher);
    expect(retry.retryAfterMs).toBe(7_000);
    const gone = await attempt(answering(410, { 'retry-after': '7' }).dispatcher);
    expect(gone.retryAfterMs).toBeUndefined();
  });

  it('POSTs the signed headers to the origin and path, within the timeout', async () => {
    const { dispatcher, dispatched } = answering(204);
    await attempt(dispatcher);
    expect(dispatched).toEqual([
      expect.objectContaining({
        origin: 'https://hooks.example',
        path: '/in?x=1',
        method: 'POST',
        body: '{}',
        headersTimeout: 15_000,
        bodyTimeout: 15_000,
        headers: expect.objectContaining({
          'content-type': 'application/json',
          'user-agent': 'test/1',
          'webhook-id': 'msg_1',
          'webhook-timestamp': '1700000000',
          'webhook-signature': expect.stringMatching(/^v1,/),
        }),
      }),
    ]);
  });

  it('calls a dispatcher factory, or uses a dispatcher object as it is', async () => {
    const { dispatcher, dispatched } = answering(204);
    const made = vi.fn(() => dispatcher);
    expect((await attempt(made)).verdict).toBe('delivered');
    expect(made).toHaveBeenCalledTimes(1);
    const callable = Object.assign(() => {
      throw new Error('not a factory');
    }, {});
    // an object with dispatch() is never called
    const object = { dispatch: (dispatcher as { dispatch: unknown }).dispatch };
    expect((await attempt(object as never)).verdict).toBe('delivered');
    expect(dispatched).toHaveLength(2);
    expect((await attempt(callable as never)).attempt.error).toBe('network error');
  });
});

describe('attemptDelivery: what a failure is recorded as', () => {
  const refusal = (reason: 'private' | 'unresolvable') =>
    new WebhookAddressError(reason, `The webhook host x.example ${reason}.`);
  const wrapped = (error: Error, depth: number): Error =>
    depth === 0 ? error : new Error(`wrap ${depth}`, { cause: wrapped(error, depth - 1) });

  it('an address refusal, even wrapped up to four times: final, unless unresolvable', async () => {
    for (const depth of [0, 1, 4]) {
      const outcome = await attempt(failing(wrapped(refusal('private'), depth)).dispatcher);
      expect(outcome.attempt.error, `depth ${depth}`).toBe('address refused (private)');
      expect(outcome.verdict).toBe('final');
      expect(outcome.attempt.status).toBeUndefined();
    }
    const dns = await attempt(failing(refusal('unresolvable')).dispatcher);
    expect(dns.attempt.error).toBe('address refused (unresolvable)');
    expect(dns.verdict).toBe('retry');
  });

  it('a refusal wrapped five times or more is a network error, retried', async () => {
    const outcome = await attempt(failing(wrapped(refusal('private'), 5)).dispatcher);
    expect(outcome.attempt.error).toBe('network error');
    expect(outcome.verdict).toBe('retry');
  });

  it('timeouts, whether named or coded', async () => {
    const named = (name: string) => Object.assign(new Error('x'), { name });
    const coded = (code: string) => Object.assign(new Error('x'), { code });
    for (const error of [
      named('TimeoutError'),
      named('AbortError'),
      coded('UND_ERR_HEADERS_TIMEOUT'),
      coded('UND_ERR_BODY_TIMEOUT'),
    ]) {
      const outcome = await attempt(failing(error).dispatcher);
      expect(outcome.attempt.error).toBe('timeout');
      expect(outcome.verdict).toBe('retry');
    }
  });

  it('the error’s code, else its cause’s, else a network error', async () => {
    const error = (fields: object) => Object.assign(new Error('x'), fields);
    const cases: [unknown, string][] = [
      [error({ code: 'ECONNRESET' }), 'ECONNRESET'],
      [error({ code: 42, cause: { code: 'EPIPE' } }), 'EPIPE'],
      [error({ cause: { code: 'ECONNREFUSED' } }), 'ECONNREFUSED'],
      [error({ cause: { code: 7 } }), 'network error'],
      [error({ code: 42 }), 'network error'],
      [new Error('plain'), 'network error'],
      ['a string', 'network error'],
    ];
    for (const [thrown, recorded] of cases) {
      const outcome = await attempt(failing(thrown).dispatcher);
      expect(outcome.attempt.error, String(thrown)).toBe(recorded);
      expect(outcome.verdict).toBe('retry');
    }
  });

  it('a dispatcher that throws null: a network error, never a rejection', async () => {
    const outcome = await attempt(
      scripted(() => {
        throw null;
      }).dispatcher,
    );
    expect(outcome.attempt.error).toBe('network error');
    expect(outcome.verdict).toBe('retry');
  });
});

describe('post: the exchange', () => {
  const options = (dispatcher: never, bodyLimit = 10) => ({
    dispatcher,
    timeout: 1_000,
    bodyLimit,
  });

  it('needs no deadline watch', async () => {
    const answer = await post('https://a.example/', {}, '{}', options(answering(201).dispatcher));
    expect(answer).toEqual({ status: 201, retryAfter: undefined });
  });

  it('takes the first of repeated Retry-After headers', async () => {
    const answer = await post(
      'https://a.example/',
      {},
      '{}',
      options(answering(503, { 'retry-after': ['5', '9'] }).dispatcher),
    );
    expect(answer).toEqual({ status: 503, retryAfter: '5' });
  });

  it('gives the connection up past bodyLimit bytes of the answer, keeping its status', async () => {
    const aborts: unknown[][] = [];
    const sizes = [[10], [6, 4], [11], [6, 5]];
    for (const chunks of sizes) {
      const { dispatcher } = scripted((h, c) => {
        h.onRequestStart(c);
        h.onResponseStart(c, 200, {});
        for (const n of chunks) h.onResponseData(c, Buffer.alloc(n));
        aborts.push(c.aborted);
        h.onResponseEnd(c);
      });
      expect((await post('https://a.example/', {}, '{}', options(dispatcher))).status).toBe(200);
    }
    expect(aborts.map((a) => a.length)).toEqual([0, 0, 1, 1]);
    expect(aborts[2]![0]).toEqual(new Error('The answer is too large.'));
  });

  it('waits past an informational answer for the final one, and fails without one', async () => {
    const informational = scripted((h, c) => {
      h.onRequestStart(c);
      h.onResponseStart(c, 102, {});
      h.onResponseStart(c, 202, {});
      h.onResponseEnd(c);
    });
    expect(
      (await post('https://a.example/', {}, '', options(informational.dispatcher))).status,
    ).toBe(202);
    const cutOff = scripted((h, c) => {
      h.onRequestStart(c);
      h.onResponseStart(c, 103, {});
      h.onResponseError(c, new Error('reset'));
    });
    await expect(post('https://a.example/', {}, '', options(cutOff.dispatcher))).rejects.toThrow(
      'reset',
    );
    const silent = scripted((h, c) => {
      h.onRequestStart(c);
      h.onResponseEnd(c);
    });
    await expect(post('https://a.example/', {}, '', options(silent.dispatcher))).rejects.toThrow(
      'The exchange ended without an answer.',
    );
  });

  it('settles once: a late error after the answer changes nothing', async () => {
    const twice = scripted((h, c) => {
      h.onRequestStart(c);
      h.onResponseStart(c, 200, {});
      h.onResponseEnd(c);
      h.onResponseError(c, new Error('late'));
    });
    expect((await post('https://a.example/', {}, '', options(twice.dispatcher))).status).toBe(200);
  });
});

describe('DeadlineWatch', () => {
  const handle = () => {
    const cuts: Error[] = [];
    return { cuts, cut: (reason: Error) => cuts.push(reason) } satisfies PostHandle & {
      cuts: Error[];
    };
  };

  it('cuts an exchange once its deadline passes, on a tick every quarter of the timeout', () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'performance'] });
    const watch = new DeadlineWatch(400); // ticks every 100 ms
    const start = performance.now();
    const late = handle();
    const exact = handle();
    watch.watch(late, start + 150);
    watch.watch(exact, start + 200);
    expect(vi.getTimerCount()).toBe(1); // one timer for every exchange
    vi.advanceTimersByTime(199);
    expect(late.cuts).toHaveLength(0); // due at 150, cut on the tick at 200
    vi.advanceTimersByTime(1);
    expect(late.cuts).toHaveLength(1);
    expect(exact.cuts).toHaveLength(1); // due at 200: cut at 200
    expect(late.cuts[0]).toMatchObject({
      name: 'TimeoutError',
      message: 'The attempt took longer than its timeout.',
    });
    expect(vi.getTimerCount()).toBe(0); // nothing left to watch: the timer is gone
    vi.advanceTimersByTime(1_000);
    expect(late.cuts).toHaveLength(1);
  });

  it('ticks at most every second, at least every millisecond', () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'performance'] });
    const slow = new DeadlineWatch(60_000);
    const a = handle();
    slow.watch(a, performance.now() + 10);
    vi.advanceTimersByTime(999);
    expect(a.cuts).toHaveLength(0);
    vi.advanceTimersByTime(1);
    expect(a.cuts).toHaveLength(1);
    const fast = new DeadlineWatch(1);
    const b = handle();
    fast.watch(b, performance.now() + 1);
    vi.advanceTimersByTime(1);
    expect(b.cuts).toHaveLength(1);
  });

  it('leaves an unwatched exchange alone', () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'performance'] });
    const watch = new DeadlineWatch(400);
    const done = handle();
    const other = handle();
    watch.watch(done, performance.now() + 100);
    watch.watch(other, performance.now() + 300);
    watch.unwatch(done);
    vi.advanceTimersByTime(200);
    expect(done.cuts).toHaveLength(0);
    vi.advanceTimersByTime(100);
    expect(other.cuts).toHaveLength(1);
  });

  it('cuts an exchange undici has not started yet as soon as it starts', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'performance'] });
    const watch = new DeadlineWatch(4);
    let start!: () => void;
    const aborted: unknown[] = [];
    const { dispatcher } = scripted((h, c) => {
      start = () => {
        c.abort = (reason) => {
          aborted.push(reason);
          h.onResponseError(c, reason);
        };
        h.onRequestStart(c);
      };
    });
    const answer = post('https://a.example/', {}, '', {
      dispatcher,
      timeout: 4,
      bodyLimit: 10,
      watch: { deadlines: watch, deadline: performance.now() + 1 },
    });
    vi.advanceTimersByTime(2); // the deadline passes before undici starts the request
    expect(aborted).toEqual([]);
    start();
    expect(aborted).toHaveLength(1);
    await expect(answer).rejects.toMatchObject({ name: 'TimeoutError' });
  });
});
