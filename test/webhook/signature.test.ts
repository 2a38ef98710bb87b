import { createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { toHttpError } from '../../src/core/problem.js';
import { WebhookVerificationError } from '../../src/webhook/errors.js';
import { generateWebhookSecret } from '../../src/webhook/secret.js';
import { signWebhook, verifyWebhook, webhookHeaders } from '../../src/webhook/signature.js';

const SECRET = generateWebhookSecret();
const OLD_SECRET = generateWebhookSecret();
const NOW_S = 1_700_000_000;
const now = () => NOW_S * 1000;
const BODY = JSON.stringify({ type: 'invoice.paid', data: { id: 'inv_1', total: 4200 } });

function signed(body: string | Buffer = BODY, secrets: string | string[] = SECRET, ts = NOW_S) {
  return webhookHeaders(secrets, { id: 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W', timestamp: ts, body });
}

/** The verification failure, asserting that no secret leaks into its message. */
function failure(fn: () => unknown, secrets: string[] = [SECRET, OLD_SECRET]) {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(WebhookVerificationError);
    const e = err as WebhookVerificationError;
    for (const secret of secrets) {
      expect(e.message).not.toContain(secret);
      expect(e.message).not.toContain(secret.slice(6));
      expect(JSON.stringify(toHttpError(e))).not.toContain(secret.slice(6));
    }
    return e;
  }
  throw new Error('expected a WebhookVerificationError');
}

function argumentError(fn: () => unknown): TypeError & { code: string } {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(TypeError);
    return err as TypeError & { code: string };
  }
  throw new Error('expected a TypeError');
}

describe('secrets', () => {
  it('generates whsec_ secrets of 32 random bytes', () => {
    const a = generateWebhookSecret();
    expect(a).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(a.slice(6), 'base64')).toHaveLength(32);
    expect(a).not.toBe(generateWebhookSecret());
  });

  it('accepts a bare base64 secret as the same key', () => {
    const bare = SECRET.slice(6);
    expect(signWebhook(bare, { id: 'm', timestamp: 1, body: 'x' })).toBe(
      signWebhook(SECRET, { id: 'm', timestamp: 1, body: 'x' }),
    );
  });

  it.each([
    ['not base64', 'whsec_not*base64!'],
    ['too short', `whsec_${Buffer.alloc(16, 7).toString('base64')}`],
    ['empty', 'whsec_'],
    ['bad padding', `whsec_${Buffer.alloc(32, 1).toString('base64').slice(0, -1)}`],
  ])('refuses a secret that is %s, without quoting it', (_, secret) => {
    const err = argumentError(() => signWebhook(secret, { id: 'm', timestamp: 1, body: '' }));
    expect(err.code).toBe('ERR_INVALID_ARG_VALUE');
    if (secret.length > 6) expect(err.message).not.toContain(secret.slice(6));
    const verr = argumentError(() => verifyWebhook([SECRET, secret], BODY, signed()));
    expect(verr.message).toContain('index 1');
  });

  it('refuses a non-string secret and an empty list', () => {
    expect(argumentError(() => signWebhook([], { id: 'm', timestamp: 1, body: '' })).code).toBe(
      'ERR_INVALID_ARG_TYPE',
    );
    expect(
      argumentError(() => signWebhook([42 as never], { id: 'm', timestamp: 1, body: '' })).code,
    ).toBe('ERR_INVALID_ARG_TYPE');
  });
});

describe('signWebhook', () => {
  it('signs "id.timestamp.body" with HMAC-SHA256', () => {
    const key = Buffer.from(SECRET.slice(6), 'base64');
    const mac = createHmac('sha256', key).update(`msg_1.${NOW_S}.${BODY}`).digest('base64');
    expect(signWebhook(SECRET, { id: 'msg_1', timestamp: NOW_S, body: BODY })).toBe(`v1,${mac}`);
  });

  it('gives one signature per secret, space-separated', () => {
    const header = signWebhook([OLD_SECRET, SECRET], { id: 'm', timestamp: 1, body: BODY });
    const [a, b] = header.split(' ');
    expect(a).toBe(signWebhook(OLD_SECRET, { id: 'm', timestamp: 1, body: BODY }));
    expect(b).toBe(signWebhook(SECRET, { id: 'm', timestamp: 1, body: BODY }));
  });

  it('returns the three headers', () => {
    expect(webhookHeaders(SECRET, { id: 'msg_1', timestamp: 5, body: '{}' })).toEqual({
      'webhook-id': 'msg_1',
      'webhook-timestamp': '5',
      'webhook-signature': signWebhook(SECRET, { id: 'msg_1', timestamp: 5, body: '{}' }),
    });
  });

  it.each([
    ['an empty id', { id: '', timestamp: 1, body: '' }],
    ['an id with a space', { id: 'a b', timestamp: 1, body: '' }],
    ['an id with a dot', { id: 'a.b', timestamp: 1, body: '' }],
    ['an id over 256 characters', { id: 'a'.repeat(257), timestamp: 1, body: '' }],
    ['a non-ASCII id', { id: 'é', timestamp: 1, body: '' }],
    ['a fractional timestamp', { id: 'm', timestamp: 1.5, body: '' }],
    ['a negative timestamp', { id: 'm', timestamp: -1, body: '' }],
    ['a millisecond-sized unsafe timestamp', { id: 'm', timestamp: 2 ** 53, body: '' }],
    ['a body of another type', { id: 'm', timestamp: 1, body: 42 as never }],
  ])('refuses %s', (_, message) => {
    expect(() => signWebhook(SECRET, message)).toThrow(TypeError);
  });
});

describe('interop with the standardwebhooks package', () => {
  it('verifies what their sign() produces', () => {
    const theirs = new Webhook(SECRET);
    const id = 'msg_their';
    const signature = theirs.sign(id, new Date(NOW_S * 1000), BODY);
    const headers = {
      'webhook-id': id,
      'webhook-timestamp': String(NOW_S),
      'webhook-signature': signature,
    };
    expect(verifyWebhook(SECRET, BODY, headers, { now })).toEqual({
      id,
      timestamp: NOW_S,
      payload: JSON.parse(BODY),
    });
    expect(verifyWebhook(SECRET, Buffer.from(BODY), headers, { now }).id).toBe(id);
  });

  it('produces what their verify() accepts, rotation included', () => {
    const ts = Math.floor(Date.now() / 1000);
    const headers = signed(BODY, [OLD_SECRET, SECRET], ts);
    expect(new Webhook(SECRET).verify(BODY, headers)).toEqual(JSON.parse(BODY));
    expect(new Webhook(OLD_SECRET).verify(BODY, headers)).toEqual(JSON.parse(BODY));
    expect(() => new Webhook(generateWebhookSecret()).verify(BODY, headers)).toThrow();
  });

  it('verifies their signatures under either secret while rotating', () => {
    const id = 'msg_rot';
    const signature = [OLD_SECRET, SECRET]
      .map((s) => new Webhook(s).sign(id, new Date(NOW_S * 1000), BODY))
      .join(' ');
    const headers = {
      'webhook-id': id,
      'webhook-timestamp': String(NOW_S),
      'webhook-signature': signature,
    };
    expect(verifyWebhook(SECRET, BODY, headers, { now }).id).toBe(id);
    expect(verifyWebhook(OLD_SECRET, BODY, headers, { now }).id).toBe(id);
    expect(verifyWebhook([generateWebhookSecret(), OLD_SECRET], BODY, headers, { now }).id).toBe(
      id,
    );
  });
});

describe('verifyWebhook', () => {
  it('reads header names in any case, from a record, node headers or fetch Headers', () => {
    const headers = signed();
    const upper = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toUpperCase(), v]));
    expect(verifyWebhook(SECRET, BODY, upper, { now }).payload).toEqual(JSON.parse(BODY));
    expect(verifyWebhook(SECRET, BODY, new Headers(headers), { now }).id).toBe(
      headers['webhook-id'],
    );
    const arrays = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, [v]]));
    expect(verifyWebhook(SECRET, BODY, arrays, { now }).timestamp).toBe(NOW_S);
  });

  it('reads the svix-* names when no webhook-* header is there', () => {
    const h = signed();
    const svix = {
      'svix-id': h['webhook-id'],
      'svix-timestamp': h['webhook-timestamp'],
      'svix-signature': h['webhook-signature'],
    };
    expect(verifyWebhook(SECRET, BODY, svix, { now }).id).toBe(h['webhook-id']);
  });

  it.each(['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const)(
    'fails with headers when %s is missing or empty',
    (name) => {
      const missing = { ...signed(), [name]: undefined };
      expect(failure(() => verifyWebhook(SECRET, BODY, missing, { now })).code).toBe(
        'ERR_WEBHOOK_HEADERS',
      );
      const empty = { ...signed(), [name]: '' };
      const err = failure(() => verifyWebhook(SECRET, BODY, empty, { now }));
      expect(err.failure).toBe('headers');
      expect(err.message).toContain(name);
      expect(toHttpError(err).status).toBe(400);
    },
  );

  it('fails with headers when a header is duplicated', () => {
    const h = signed();
    const twice = { ...h, 'webhook-id': [h['webhook-id'], 'msg_other'] };
    expect(failure(() => verifyWebhook(SECRET, BODY, twice, { now })).failure).toBe('headers');
    const cased = { ...h, 'Webhook-Id': h['webhook-id'] };
    expect(failure(() => verifyWebhook(SECRET, BODY, cased, { now })).failure).toBe('headers');
    const joined = new Headers(h);
    joined.append('webhook-signature', h['webhook-signature']);
    expect(failure(() => verifyWebhook(SECRET, BODY, joined, { now })).failure).toBe('headers');
  });

  it.each(['', 'soon', '1700000000.5', '-1700000000', '1e9', '17000000000000000'])(
    'fails with headers for the timestamp %j',
    (stamp) => {
      const headers = { ...signed(), 'webhook-timestamp': stamp };
      expect(failure(() => verifyWebhook(SECRET, BODY, headers, { now })).failure).toBe('headers');
    },
  );

  it.each(['v1', 'v1,', ',abc', 'v1,a,b'])('fails with headers for the signature %j', (sig) => {
    const headers = { ...signed(), 'webhook-signature': sig };
    expect(failure(() => verifyWebhook(SECRET, BODY, headers, { now })).failure).toBe('headers');
  });

  it('fails with headers for an id with spaces or over 256 characters', () => {
    for (const id of ['a b', 'x'.repeat(257)]) {
      const headers = { ...signed(), 'webhook-id': id };
      expect(failure(() => verifyWebhook(SECRET, BODY, headers, { now })).failure).toBe('headers');
    }
  });

  it('fails with timestamp when too old or too new, and honours tolerance', () => {
    const old = signed(BODY, SECRET, NOW_S - 301);
    const e1 = failure(() => verifyWebhook(SECRET, BODY, old, { now }));
    expect(e1.failure).toBe('timestamp');
    expect(toHttpError(e1).status).toBe(401);
    expect(toHttpError(e1).headers['WWW-Authenticate']).toBe('Webhook');
    const future = signed(BODY, SECRET, NOW_S + 301);
    expect(failure(() => verifyWebhook(SECRET, BODY, future, { now })).code).toBe(
      'ERR_WEBHOOK_TIMESTAMP',
    );
    expect(verifyWebhook(SECRET, BODY, signed(BODY, SECRET, NOW_S - 300), { now }).id).toBeTruthy();
    expect(verifyWebhook(SECRET, BODY, old, { now, tolerance: 3_600_000 }).id).toBeTruthy();
    const late = signed(BODY, SECRET, NOW_S - 2);
    expect(
      failure(() => verifyWebhook(SECRET, BODY, late, { now, tolerance: 1_000 })).failure,
    ).toBe('timestamp');
    expect(() => verifyWebhook(SECRET, BODY, late, { tolerance: -1 })).toThrow(TypeError);
  });

  it('checks against the real clock by default', () => {
    const headers = signed(BODY, SECRET, Math.floor(Date.now() / 1000));
    expect(verifyWebhook(SECRET, BODY, headers).id).toBeTruthy();
    expect(failure(() => verifyWebhook(SECRET, BODY, signed())).failure).toBe('timestamp');
  });

  it('fails with signature for a bad signature, a wrong secret or a tampered body', () => {
    const headers = signed();
    const bad = { ...headers, 'webhook-signature': `v1,${Buffer.alloc(32).toString('base64')}` };
    const e = failure(() => verifyWebhook(SECRET, BODY, bad, { now }));
    expect(e.code).toBe('ERR_WEBHOOK_SIGNATURE');
    expect(toHttpError(e).status).toBe(401);
    expect(failure(() => verifyWebhook(OLD_SECRET, BODY, headers, { now })).failure).toBe(
      'signature',
    );
    const tampered = Buffer.from(BODY);
    tampered[10] = tampered[10]! ^ 1;
    expect(failure(() => verifyWebhook(SECRET, tampered, headers, { now })).failure).toBe(
      'signature',
    );
    const otherId = { ...headers, 'webhook-id': 'msg_other' };
    expect(failure(() => verifyWebhook(SECRET, BODY, otherId, { now })).failure).toBe('signature');
  });

  it('skips signatures of other versions', () => {
    const v1 = signed()['webhook-signature'].slice(3);
    const headers = { ...signed(), 'webhook-signature': `v2,${v1} v1a,${v1}` };
    expect(failure(() => verifyWebhook(SECRET, BODY, headers, { now })).failure).toBe('signature');
    const mixed = { ...signed(), 'webhook-signature': `v1a,${v1}  v1,${v1}` };
    expect(verifyWebhook(SECRET, BODY, mixed, { now }).id).toBeTruthy();
  });

  it('checks the signature before parsing, then fails with payload for a body not JSON', () => {
    const text = '{"unterminated": ';
    expect(failure(() => verifyWebhook(SECRET, text, signed(), { now })).failure).toBe('signature');
    const e = failure(() => verifyWebhook(SECRET, text, signed(text), { now }));
    expect(e.code).toBe('ERR_WEBHOOK_PAYLOAD');
    expect(toHttpError(e).status).toBe(400);
    expect(failure(() => verifyWebhook(SECRET, '', signed(''), { now })).failure).toBe('payload');
  });

  it('verifies a Buffer body byte-exactly, non-UTF-8 bytes included', () => {
    const bytes = Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0xff, 0xfe, 0x7d]);
    const headers = signed(bytes);
    const mangled = Buffer.from(bytes.toString('utf8'));
    expect(failure(() => verifyWebhook(SECRET, mangled, headers, { now })).failure).toBe(
      'signature',
    );
    // the signature matches the exact bytes; they are not valid UTF-8, so not JSON
    expect(failure(() => verifyWebhook(SECRET, bytes, headers, { now })).failure).toBe('payload');
    const latin = Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xe9]), Buffer.from('"}')]);
    expect(failure(() => verifyWebhook(SECRET, latin, signed(latin), { now })).failure).toBe(
      'payload',
    );
  });

  it('drops prototype-polluting keys from the payload', () => {
    const text = '{"__proto__":{"admin":true},"ok":1}';
    const { payload } = verifyWebhook<Record<string, unknown>>(SECRET, text, signed(text), { now });
    expect(payload).toEqual({ ok: 1 });
    expect(({} as Record<string, unknown>).admin).toBeUndefined();
  });

  it('round-trips a few hundred random ids, bodies and secrets', () => {
    let seed = 20260;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const idChars = [...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-:~!,'];
    for (let i = 0; i < 300; i++) {
      const secret = `whsec_${Buffer.from(Array.from({ length: 24 + rand(40) }, () => rand(256))).toString('base64')}`;
      const id = Array.from({ length: 1 + rand(64) }, () => idChars[rand(idChars.length)]).join('');
      const value = Array.from({ length: rand(50) }, () =>
        String.fromCodePoint(32 + rand(0x2000)),
      ).join('');
      const body = JSON.stringify({ i, value });
      const input = i % 2 === 0 ? body : Buffer.from(body);
      const ts = NOW_S - 300 + rand(600);
      const headers = webhookHeaders(secret, { id, timestamp: ts, body: input });
      const result = verifyWebhook(secret, input, headers, { now });
      expect(result).toEqual({ id, timestamp: ts, payload: { i, value } });
      if (i % 25 === 0) {
        expect(
          failure(() => verifyWebhook(SECRET, input, headers, { now }), [secret]).failure,
        ).toBe('signature');
      }
    }
  });
});
