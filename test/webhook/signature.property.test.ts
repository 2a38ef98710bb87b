// Property tests of Standard Webhooks signing and verification: signWebhook(), verifyWebhook()
// and the verifyWebhooks() receiver.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { WebhookVerificationError } from '../../src/webhook/errors.js';
import { getWebhook, verifyWebhooks } from '../../src/webhook/receiver.js';
import { signWebhook, verifyWebhook, webhookHeaders } from '../../src/webhook/signature.js';
import { caseTally } from '../helpers/arbitraries.js';
import { fakeRequest, fakeResponse } from '../helpers/fake-http.js';

const RUNS = { numRuns: 300 };
const NOW = 1_700_000_000;
const now = () => NOW * 1000;
/** The tolerance, in seconds (the header's unit) and in milliseconds (the option's). */
const TOLERANCE = 300;
const TOLERANCE_MS = TOLERANCE * 1000;

const secret = fc
  .uint8Array({ minLength: 24, maxLength: 48 })
  .map((b) => `whsec_${Buffer.from(b).toString('base64')}`);
/** 1–256 visible ASCII characters without `.` (the sender's rule). */
const id = fc.string({
  unit: fc
    .integer({ min: 0x21, max: 0x7e })
    .filter((c) => c !== 0x2e)
    .map((c) => String.fromCharCode(c)),
  minLength: 1,
  maxLength: 256,
});
const timestamp = fc.integer({ min: NOW - TOLERANCE, max: NOW + TOLERANCE });
const body = fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v));

/** The receiver drops these keys (prototype pollution), so the expected payload does too. */
const parsePayload = (text: string): unknown =>
  JSON.parse(text, (key, value) =>
    key === '__proto__' || key === 'constructor' || key === 'prototype' ? undefined : value,
  );

const flip = (s: string, at: number, bit: number) =>
  s.slice(0, at) + String.fromCharCode(s.charCodeAt(at) ^ (1 << bit)) + s.slice(at + 1);

function failure(run: () => unknown): string | undefined {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(WebhookVerificationError);
    return (error as WebhookVerificationError).failure;
  }
  return undefined;
}

describe('webhook signatures (property)', () => {
  it('sign then verify round-trips any JSON body, id and timestamp within tolerance', () => {
    const tally = caseTally();
    fc.assert(
      fc.property(secret, id, timestamp, body, fc.boolean(), (s, i, t, b, asBuffer) => {
        tally.case();
        tally.hit('checked');
        const raw = asBuffer ? Buffer.from(b, 'utf8') : b;
        const headers = webhookHeaders(s, { id: i, timestamp: t, body: raw });
        const verified = verifyWebhook(s, raw, headers, { tolerance: TOLERANCE_MS, now });
        expect(verified).toEqual({ id: i, timestamp: t, payload: parsePayload(b) });
      }),
      RUNS,
    );
    tally.expectShares({ checked: 1 });
  });

  it('any single-bit change of the body fails with `signature`', () => {
    const tally = caseTally();
    fc.assert(
      fc.property(
        secret,
        id,
        timestamp,
        body,
        fc.nat(),
        fc.nat({ max: 7 }),
        (s, i, t, b, at, bit) => {
          tally.case();
          tally.hit('checked');
          const raw = Buffer.from(b, 'utf8');
          const headers = webhookHeaders(s, { id: i, timestamp: t, body: raw });
          const changed = Buffer.from(raw);
          changed[at % changed.length]! ^= 1 << bit;
          expect(failure(() => verifyWebhook(s, changed, headers, { now }))).toBe('signature');
        },
      ),
      RUNS,
    );
    tally.expectShares({ checked: 1 });
  });

  it('any single-bit change of the id, timestamp or signature header fails verification', () => {
    const tally = caseTally();
    fc.assert(
      fc.property(
        secret,
        id,
        timestamp,
        body,
        fc.constantFrom('webhook-id', 'webhook-timestamp', 'webhook-signature'),
        fc.nat(),
        fc.nat({ max: 7 }),
        (s, i, t, b, name, at, bit) => {
          tally.case();
          tally.hit('checked');
          const headers: Record<string, string> = webhookHeaders(s, {
            id: i,
            timestamp: t,
            body: b,
          });
          const value = headers[name]!;
          headers[name] = flip(value, at % value.length, bit);
          const failed = failure(() =>
            verifyWebhook(s, b, headers, { tolerance: TOLERANCE_MS, now }),
          );
          expect(failed).toBeDefined();
          expect(failed).not.toBe('payload');
        },
      ),
      RUNS,
    );
    tally.expectShares({ checked: 1 });
  });

  it('while rotating, a signature by any one secret verifies against the list', () => {
    const tally = caseTally();
    fc.assert(
      fc.property(
        fc.uniqueArray(secret, { minLength: 1, maxLength: 4 }),
        fc.nat(),
        id,
        timestamp,
        body,
        (secrets, pick, i, t, b) => {
          tally.case();
          tally.hit('checked');
          const signer = secrets[pick % secrets.length]!;
          const headers = webhookHeaders(signer, { id: i, timestamp: t, body: b });
          expect(verifyWebhook(secrets, b, headers, { now }).id).toBe(i);
          // signed with all of them, each one alone verifies
          const all = webhookHeaders(secrets, { id: i, timestamp: t, body: b });
          expect(all['webhook-signature'].split(' ')).toHaveLength(secrets.length);
          for (const one of secrets) expect(verifyWebhook(one, b, all, { now }).id).toBe(i);
          // and a list without the signer does not
          const others = secrets.filter((x) => x !== signer);
          if (others.length > 0) {
            tally.hit('without the signer');
            expect(failure(() => verifyWebhook(others, b, headers, { now }))).toBe('signature');
          }
        },
      ),
      { numRuns: 200 },
    );
    // lists of 2–4 secrets (measured ~75%) also check that a list without the signer fails
    tally.expectShares({ checked: 1, 'without the signer': 0.5 });
  });

  it('a timestamp outside the tolerance fails with `timestamp`', () => {
    const tally = caseTally();
    fc.assert(
      fc.property(
        secret,
        id,
        fc.oneof(
          fc.integer({ min: 0, max: NOW - TOLERANCE - 1 }),
          fc.integer({ min: NOW + TOLERANCE + 1, max: NOW * 2 }),
        ),
        body,
        (s, i, t, b) => {
          tally.case();
          tally.hit('checked');
          const headers = webhookHeaders(s, { id: i, timestamp: t, body: b });
          expect(
            failure(() => verifyWebhook(s, b, headers, { tolerance: TOLERANCE_MS, now })),
          ).toBe('timestamp');
        },
      ),
      RUNS,
    );
    tally.expectShares({ checked: 1 });
  });

  it('any headers and body: only ever a WebhookVerificationError, never another error', () => {
    const s = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const header = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 30 }),
      fc.constantFrom('v1,', 'v1,a', ' ', 'v1,a v1,b', '1700000000', '0', '99999999999999999'),
    );
    const tally = caseTally();
    fc.assert(
      fc.property(
        fc.record(
          {
            'webhook-id': header,
            'webhook-timestamp': header,
            'webhook-signature': header,
            'svix-id': header,
          },
          { requiredKeys: [] },
        ),
        fc.string({ unit: 'binary', maxLength: 30 }),
        (headers, b) => {
          tally.case();
          tally.hit('checked');
          expect(failure(() => verifyWebhook(s, b, headers, { now }))).toBeDefined();
        },
      ),
      { numRuns: 500 },
    );
    tally.expectShares({ checked: 1 });
  });

  it('signWebhook refuses an id with `.`, or a bad timestamp, with a TypeError', () => {
    const tally = caseTally();
    fc.assert(
      fc.property(
        secret,
        fc.oneof(
          id.map((i) => `${i}.`),
          fc.constant(''),
        ),
        fc.oneof(fc.constant(-1), fc.constant(1.5), fc.constant(Number.NaN)),
        (s, i, t) => {
          tally.case();
          tally.hit('checked');
          expect(() => signWebhook(s, { id: i, timestamp: NOW, body: '{}' })).toThrow(TypeError);
          expect(() => signWebhook(s, { id: 'ok', timestamp: t, body: '{}' })).toThrow(TypeError);
        },
      ),
      { numRuns: 100 },
    );
    tally.expectShares({ checked: 1 });
  });
});

describe('verifyWebhooks receiver (property)', () => {
  async function receive(
    secrets: string | string[],
    raw: Buffer,
    headers: Record<string, string>,
  ): Promise<{ ok: true; webhook: unknown } | { ok: false; error: unknown }> {
    const mw = verifyWebhooks({ secret: secrets });
    const req = fakeRequest({
      method: 'POST',
      headers: [['Content-Type', 'application/json'], ...Object.entries(headers)],
      body: raw,
    });
    const { res } = fakeResponse(req);
    let webhook: unknown;
    try {
      await mw(req, res, async () => {
        webhook = getWebhook(req);
      });
    } catch (error) {
      return { ok: false, error };
    }
    return { ok: true, webhook };
  }

  it('passes a signed request on with the verified webhook; a flipped bit is a 400/401', async () => {
    const tally = caseTally();
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(secret, { minLength: 1, maxLength: 3 }),
        id,
        fc.integer({ min: -240, max: 240 }),
        body,
        fc.constantFrom('body', 'webhook-id', 'webhook-timestamp', 'webhook-signature'),
        fc.nat(),
        fc.nat({ max: 7 }),
        async (secrets, i, offset, b, target, at, bit) => {
          tally.case();
          tally.hit('checked');
          // the receiver reads the real clock: stay well inside its 300 s tolerance
          const t = Math.floor(Date.now() / 1000) + offset;
          const raw = Buffer.from(b, 'utf8');
          const headers: Record<string, string> = webhookHeaders(secrets.at(-1)!, {
            id: i,
            timestamp: t,
            body: raw,
          });
          const good = await receive(secrets, raw, headers);
          expect(good).toEqual({
            ok: true,
            webhook: { id: i, timestamp: t, payload: parsePayload(b) },
          });

          let changed = raw;
          if (target === 'body') {
            changed = Buffer.from(raw);
            changed[at % changed.length]! ^= 1 << bit;
          } else {
            const value = headers[target]!;
            // a header value is Latin-1 on the wire: flip within the low 7 bits
            headers[target] = flip(value, at % value.length, bit % 7);
          }
          const bad = await receive(secrets, changed, headers);
          expect(bad.ok).toBe(false);
          const error = (bad as { error: unknown }).error;
          expect(error).toBeInstanceOf(WebhookVerificationError);
          expect([400, 401]).toContain((error as WebhookVerificationError).toHttpError().status);
          expect((error as WebhookVerificationError).failure).not.toBe('payload');
        },
      ),
      { numRuns: 200 },
    );
    tally.expectShares({ checked: 1 });
  });
});
