// The edges of signing and verifying (Standard Webhooks): the exact messages a caller sees,
// malformed and absent headers, prototype keys, the key cache, and the retry schedule's
// parsers. Clocks are injected: nothing here depends on the real time.
import { describe, expect, it } from 'vitest';
import {
  parseRetryAfter,
  parseRetrySchedule,
  retryDelay,
} from '../../src/webhook/delivery/schedule.js';
import { WebhookVerificationError } from '../../src/webhook/errors.js';
import { generateWebhookSecret, webhookKeys } from '../../src/webhook/secret.js';
import { signWebhook, verifyWebhook, webhookHeaders } from '../../src/webhook/signature.js';

const SECRET = generateWebhookSecret();
const NOW_S = 1_700_000_000;
const now = () => NOW_S * 1000;
const BODY = '{"type":"ping"}';

const signed = (body: string = BODY, timestamp = NOW_S, id = 'msg_1') =>
  webhookHeaders(SECRET, { id, timestamp, body });

/** The error `fn` throws (it must throw). */
function thrown(fn: () => unknown): Error & { code?: string; failure?: string } {
  try {
    fn();
  } catch (err) {
    return err as Error & { code?: string; failure?: string };
  }
  throw new Error('expected an error');
}

/** The verification failure of these headers (and body), as [failure, message]. */
function refusal(headers: Record<string, unknown>, body: string | Buffer = BODY, options = {}) {
  const err = thrown(() => verifyWebhook(SECRET, body, headers as never, { now, ...options }));
  expect(err).toBeInstanceOf(WebhookVerificationError);
  return [err.failure, err.message];
}

describe('signWebhook: what it refuses, and how it says so', () => {
  it('refuses an id that is not a string, even one whose text would do', () => {
    const err = thrown(() => signWebhook(SECRET, { id: 42 as never, timestamp: 1, body: '' }));
    expect(err).toBeInstanceOf(TypeError);
    expect(err.code).toBe('ERR_INVALID_ARG_VALUE');
    expect(err.message).toBe('The webhook id must be 1–256 visible ASCII characters, without `.`.');
  });

  it('names the timestamp and the body in their messages', () => {
    const stamp = thrown(() => signWebhook(SECRET, { id: 'm', timestamp: -1, body: '' }));
    expect(stamp.message).toBe(
      'The webhook timestamp must be a whole, non-negative number of seconds.',
    );
    expect(stamp.code).toBe('ERR_INVALID_ARG_VALUE');
    const body = thrown(() => signWebhook(SECRET, { id: 'm', timestamp: 1, body: 42 as never }));
    expect(body).toBeInstanceOf(TypeError);
    expect(body.message).toBe('The webhook body must be a string or a Buffer.');
    expect(body.code).toBe('ERR_INVALID_ARG_TYPE');
  });
});

describe('secrets: messages and the key cache', () => {
  it('says which secret is wrong, and that a list must not be empty', () => {
    const notString = thrown(() => signWebhook(7 as never, { id: 'm', timestamp: 1, body: '' }));
    expect(notString.message).toBe('Give a webhook secret, or a non-empty list of them.');
    expect(notString.code).toBe('ERR_INVALID_ARG_TYPE');
    const short = thrown(() => signWebhook('whsec_c2hvcnQ=', { id: 'm', timestamp: 1, body: '' }));
    expect(short.message).toBe(
      'The webhook secret must be `whsec_` followed by the base64 of 24 bytes or more.',
    );
    const inList = thrown(() => webhookKeys([SECRET, 5 as never]));
    expect(inList.message).toBe('The webhook secret at index 1 must be a string.');
    const empty = thrown(() => webhookKeys([]));
    expect(empty.message).toBe('Give a webhook secret, or a non-empty list of them.');
    expect(empty.code).toBe('ERR_INVALID_ARG_TYPE');
    expect(thrown(() => webhookKeys('x' as never)).code).toBe('ERR_INVALID_ARG_VALUE');
  });

  it('decodes a secret once: the same key object while it stays among the 64 used last', () => {
    const secrets = Array.from({ length: 66 }, () => generateWebhookSecret());
    const key = (s: string) => webhookKeys(s)[0];
    // 64 fresh secrets fill the cache exactly (whatever it held before is pushed out)
    const first = secrets.slice(0, 64).map(key);
    expect(key(secrets[0]!)).toBe(first[0]); // a hit: the 64th did not push the 1st out
    expect(key(secrets[0]!)).toBe(first[0]); // a hit on the one used last
    expect(key(secrets[63]!)).toBe(first[63]);
    // secrets[0] and [63] were used again, so the 65th pushes out the least recently used: [1]
    key(secrets[64]!);
    expect(key(secrets[0]!)).toBe(first[0]);
    expect(key(secrets[1]!)).not.toBe(first[1]); // decoded again (pushing out [2])
    expect(key(secrets[3]!)).toBe(first[3]);
    expect(key(secrets[2]!)).not.toBe(first[2]);
    // a key decoded again signs as before
    expect(signWebhook(secrets[1]!, { id: 'm', timestamp: 1, body: 'x' })).toBe(
      signWebhook([secrets[1]!], { id: 'm', timestamp: 1, body: 'x' }),
    );
  });
});

describe('verifyWebhook: headers', () => {
  it('says which header is missing', () => {
    const { 'webhook-id': _i, ...noId } = signed();
    expect(refusal(noId)).toEqual(['headers', 'The webhook-id header is missing.']);
    const { 'webhook-timestamp': _t, ...noStamp } = signed();
    expect(refusal(noStamp)).toEqual(['headers', 'The webhook-timestamp header is missing.']);
    const { 'webhook-signature': _s, ...noSig } = signed();
    expect(refusal(noSig)).toEqual(['headers', 'The webhook-signature header is missing.']);
  });

  it('says which header appears more than once', () => {
    const h = signed();
    expect(refusal({ ...h, 'Webhook-Timestamp': h['webhook-timestamp'] })).toEqual([
      'headers',
      'The webhook-timestamp header appears more than once.',
    ]);
  });

  it('ignores a header whose value is undefined (node leaves such keys in a record)', () => {
    const h = signed();
    const svix = {
      'webhook-id': undefined,
      'svix-id': h['webhook-id'],
      'svix-timestamp': h['webhook-timestamp'],
      'svix-signature': h['webhook-signature'],
    };
    expect(verifyWebhook(SECRET, BODY, svix, { now }).id).toBe('msg_1');
    const once = { ...h, 'Webhook-Id': undefined };
    expect(verifyWebhook(SECRET, BODY, once, { now }).id).toBe('msg_1');
  });

  it('says what is malformed: the id, the timestamp, the signature', () => {
    expect(refusal({ ...signed(), 'webhook-id': 'a b' })).toEqual([
      'headers',
      'The webhook-id header is not a valid message id.',
    ]);
    expect(refusal({ ...signed(), 'webhook-timestamp': 'soon' })).toEqual([
      'headers',
      'The webhook-timestamp header is not a whole number of seconds.',
    ]);
    expect(refusal({ ...signed(), 'webhook-signature': 'v1' })).toEqual([
      'headers',
      'The webhook-signature header is malformed.',
    ]);
  });

  it('takes a signature header of spaces only as malformed, not as a wrong signature', () => {
    expect(refusal({ ...signed(), 'webhook-signature': '   ' })).toEqual([
      'headers',
      'The webhook-signature header is malformed.',
    ]);
  });

  it('finds the matching signature among several, whatever their order and spacing', () => {
    const h = signed();
    const other = webhookHeaders(generateWebhookSecret(), {
      id: 'msg_1',
      timestamp: NOW_S,
      body: BODY,
    });
    for (const list of [
      `${other['webhook-signature']} ${h['webhook-signature']}`,
      `${h['webhook-signature']}  ${other['webhook-signature']}`,
      `v1a,abc ${h['webhook-signature']} v2,xyz`,
    ]) {
      expect(verifyWebhook(SECRET, BODY, { ...h, 'webhook-signature': list }, { now }).id).toBe(
        'msg_1',
      );
    }
    expect(refusal({ ...h, 'webhook-signature': `${other['webhook-signature']} v1a,x` })).toEqual([
      'signature',
      'No webhook signature matches the request.',
    ]);
  });
});

describe('verifyWebhook: a signature is its exact characters', () => {
  it('refuses a copy of the signature with characters outside Latin-1 standing for its bytes', () => {
    const h = signed();
    const shift = (by: number) =>
      `v1,${[...h['webhook-signature'].slice(3)].map((c) => String.fromCharCode(c.charCodeAt(0) + by)).join('')}`;
    for (const by of [256, 0x1_00_00 - 0x100]) {
      expect(refusal({ ...h, 'webhook-signature': shift(by) })[0]).toBe('signature');
    }
    expect(verifyWebhook(SECRET, BODY, { ...h, 'webhook-signature': shift(0) }, { now }).id).toBe(
      'msg_1',
    );
  });
});

describe('verifyWebhook: the timestamp, exact to the second', () => {
  it('accepts the bounds of the tolerance, refuses one second past them, naming the side', () => {
    const at = (ts: number, tolerance?: number) =>
      verifyWebhook(SECRET, BODY, signed(BODY, ts), { now, tolerance }).timestamp;
    expect(at(NOW_S - 300)).toBe(NOW_S - 300);
    expect(at(NOW_S + 300)).toBe(NOW_S + 300);
    expect(refusal(signed(BODY, NOW_S - 301))).toEqual([
      'timestamp',
      'The webhook timestamp is too old.',
    ]);
    expect(refusal(signed(BODY, NOW_S + 301))).toEqual([
      'timestamp',
      'The webhook timestamp is in the future.',
    ]);
    expect(at(NOW_S, 0)).toBe(NOW_S);
    expect(refusal(signed(BODY, NOW_S - 1), BODY, { tolerance: 0 })[0]).toBe('timestamp');
    expect(refusal(signed(BODY, NOW_S + 1), BODY, { tolerance: '999ms' })[1]).toBe(
      'The webhook timestamp is in the future.',
    );
  });

  it('compares with the current second rounded down', () => {
    const late = () => NOW_S * 1000 + 999;
    const ok = verifyWebhook(SECRET, BODY, signed(BODY, NOW_S + 1), { now: late, tolerance: 1000 });
    expect(ok.timestamp).toBe(NOW_S + 1);
    expect(
      thrown(() =>
        verifyWebhook(SECRET, BODY, signed(BODY, NOW_S - 1), { now: late, tolerance: '999ms' }),
      ).message,
    ).toBe('The webhook timestamp is too old.');
  });
});

describe('verifyWebhook: arguments and payload', () => {
  it('names its options in their messages', () => {
    expect(thrown(() => verifyWebhook(SECRET, BODY, signed(), { tolerance: -1 })).message).toBe(
      'verifyWebhook(): `tolerance` must be milliseconds, at least 0',
    );
    expect(thrown(() => verifyWebhook(SECRET, BODY, signed(), { now: 5 as never })).message).toBe(
      'verifyWebhook(): `now` must be a function',
    );
  });

  it('refuses a body that is neither a string nor a Buffer before reading the headers', () => {
    const err = thrown(() => verifyWebhook(SECRET, 42 as never, {}, { now }));
    expect(err).toBeInstanceOf(TypeError);
    expect(err.code).toBe('ERR_INVALID_ARG_TYPE');
    expect(err.message).toBe('The webhook body must be a string or a Buffer.');
  });

  it('says a signed body is not JSON', () => {
    expect(refusal(signed('{'), '{')).toEqual([
      'payload',
      'The webhook payload is not valid JSON.',
    ]);
  });

  it('drops constructor and prototype keys from the payload as well as __proto__', () => {
    const body = '{"a":1,"constructor":{"x":1},"prototype":{"y":2},"n":{"prototype":3,"b":4}}';
    const { payload } = verifyWebhook(SECRET, body, signed(body), { now });
    expect(payload).toEqual({ a: 1, n: { b: 4 } });
    expect(Object.hasOwn(payload as object, 'constructor')).toBe(false);
    expect(Object.hasOwn(payload as object, 'prototype')).toBe(false);
  });
});

describe('the retry schedule: Retry-After and parsed schedules', () => {
  it('reads the first of repeated Retry-After headers, trimmed', () => {
    expect(parseRetryAfter(['120', '5'], 0)).toBe(120_000);
    expect(parseRetryAfter(' 7 ', 0)).toBe(7_000);
    expect(parseRetryAfter(undefined, 0)).toBeUndefined();
    expect(parseRetryAfter(7, 0)).toBeUndefined();
  });

  it('wants all of the value to be seconds', () => {
    expect(parseRetryAfter('120abc', 0)).toBeUndefined();
    expect(parseRetryAfter('abc120', 0)).toBeUndefined();
    expect(parseRetryAfter('12345678901', 0)).toBeUndefined(); // eleven digits
    expect(parseRetryAfter('0', 0)).toBe(0);
  });

  it('reads an HTTP date as the milliseconds from now until then, 0 when past', () => {
    const date = 'Wed, 21 Oct 2026 07:28:00 GMT';
    const at = Date.parse(date);
    expect(parseRetryAfter(date, at - 30_000)).toBe(30_000);
    expect(parseRetryAfter(date, at + 30_000)).toBe(0);
    expect(parseRetryAfter(date, at - 2 * 86_400_000)).toBe(86_400_000);
    // a date without a month or day name is not an HTTP date
    expect(parseRetryAfter('2026-10-21', at - 30_000)).toBeUndefined();
  });

  it('spreads the wait both ways with the jitter, and honours a longer Retry-After only', () => {
    expect(retryDelay(1, [1_000], { jitter: 0.2, random: () => 0.5 })).toBe(1_000);
    expect(retryDelay(1, [1_000], { jitter: 0, retryAfterMs: 10 })).toBe(1_000);
    expect(retryDelay(2, [1_000])).toBeUndefined();
    expect(retryDelay(0, [1_000])).toBeUndefined();
  });

  it('refuses a schedule with any wait over a week, and says what a schedule is', () => {
    const err = thrown(() => parseRetrySchedule('1000,604800001'));
    expect(err).toBeInstanceOf(TypeError);
    expect(err.message).toBe(
      'A retry schedule is a comma-separated list of whole milliseconds, each between 0 and 604800000.',
    );
    expect(() => parseRetrySchedule(' ')).toThrow(TypeError);
    expect(() => parseRetrySchedule('1000,')).toThrow(TypeError);
  });
});
