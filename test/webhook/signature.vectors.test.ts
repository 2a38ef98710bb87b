// Published vectors for the webhook signatures (src/webhook/signature.ts, src/webhook/secret.ts).
// Expected values are typed in from the specifications, never produced by portico; the first
// test of each block re-derives them with node:crypto so a transcription slip fails loudly.
import { createHmac, createSecretKey } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { WebhookVerificationError } from '../../src/webhook/errors.js';
import { signWebhook, verifyWebhook, webhookHeaders } from '../../src/webhook/signature.js';

/**
 * The example of the Standard Webhooks specification (spec/standard-webhooks.md, "Signature
 * scheme" / the reference libraries' test vector), also Svix's "Verifying payloads manually".
 */
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const MSG_ID = 'msg_p5jXN8AQM9LWM0D4loKWxJek';
const TIMESTAMP = 1614265330;
const PAYLOAD = '{"test": 2432232314}';
const SIGNATURE = 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=';

const HEADERS = {
  'webhook-id': MSG_ID,
  'webhook-timestamp': String(TIMESTAMP),
  'webhook-signature': SIGNATURE,
};
/** The verifier's clock at the example's timestamp (milliseconds). */
const AT_TIMESTAMP = () => TIMESTAMP * 1000;

function failure(fn: () => unknown): WebhookVerificationError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(WebhookVerificationError);
    return error as WebhookVerificationError;
  }
  throw new Error('expected a WebhookVerificationError');
}

describe('Standard Webhooks specification, signature scheme: the published example', () => {
  it('the typed-in vector is self-consistent (checked with node:crypto)', () => {
    // the secret is base64 after `whsec_`; the signed content is `${id}.${timestamp}.${body}`
    const key = Buffer.from(SECRET.slice('whsec_'.length), 'base64');
    const mac = createHmac('sha256', key)
      .update(`${MSG_ID}.${TIMESTAMP}.${PAYLOAD}`, 'utf8')
      .digest('base64');
    expect(`v1,${mac}`).toBe(SIGNATURE);
  });

  it('signWebhook produces exactly the published signature (string and Buffer body)', () => {
    const message = { id: MSG_ID, timestamp: TIMESTAMP, body: PAYLOAD };
    expect(signWebhook(SECRET, message)).toBe(SIGNATURE);
    expect(signWebhook(SECRET, { ...message, body: Buffer.from(PAYLOAD, 'utf8') })).toBe(SIGNATURE);
    // the secret without its `whsec_` prefix is the same key
    expect(signWebhook(SECRET.slice('whsec_'.length), message)).toBe(SIGNATURE);
  });

  it('webhookHeaders produces the three published header values', () => {
    expect(webhookHeaders(SECRET, { id: MSG_ID, timestamp: TIMESTAMP, body: PAYLOAD })).toEqual(
      HEADERS,
    );
  });

  it('while rotating, the published signature is the entry of this secret', () => {
    const other = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    const header = signWebhook([other, SECRET], {
      id: MSG_ID,
      timestamp: TIMESTAMP,
      body: PAYLOAD,
    });
    expect(header.split(' ')).toHaveLength(2);
    expect(header.split(' ')[1]).toBe(SIGNATURE);
  });

  it('verifyWebhook accepts the published request, its clock at the timestamp', () => {
    for (const body of [PAYLOAD, Buffer.from(PAYLOAD, 'utf8')]) {
      expect(verifyWebhook(SECRET, body, HEADERS, { now: AT_TIMESTAMP })).toEqual({
        id: MSG_ID,
        timestamp: TIMESTAMP,
        payload: { test: 2432232314 },
      });
    }
  });

  it('verifyWebhook accepts it under the svix-* header names and among other signatures', () => {
    const svix = {
      'svix-id': MSG_ID,
      'svix-timestamp': String(TIMESTAMP),
      'svix-signature': `v1a,ignored v1,${Buffer.alloc(32).toString('base64')} ${SIGNATURE}`,
    };
    expect(verifyWebhook(SECRET, PAYLOAD, svix, { now: AT_TIMESTAMP }).id).toBe(MSG_ID);
  });

  it('verifyWebhook accepts it within the default tolerance of 5 minutes, either side', () => {
    for (const offset of [-300, -1, 1, 300]) {
      const now = () => (TIMESTAMP + offset) * 1000;
      expect(verifyWebhook(SECRET, PAYLOAD, HEADERS, { now }).id).toBe(MSG_ID);
    }
    for (const offset of [-301, 301]) {
      const now = () => (TIMESTAMP + offset) * 1000;
      expect(failure(() => verifyWebhook(SECRET, PAYLOAD, HEADERS, { now })).failure).toBe(
        'timestamp',
      );
    }
  });

  it('today, with the default clock, it is refused for its timestamp (2021), not its signature', () => {
    expect(failure(() => verifyWebhook(SECRET, PAYLOAD, HEADERS)).failure).toBe('timestamp');
  });

  it('one byte changed in the body, the id, the timestamp or the signature: refused', () => {
    const at = { now: AT_TIMESTAMP };
    const cases: [string | Buffer, Record<string, string>][] = [
      ['{"test": 2432232315}', HEADERS],
      [Buffer.from(PAYLOAD.replace('2432232314', '2432232304')), HEADERS],
      [PAYLOAD, { ...HEADERS, 'webhook-id': `${MSG_ID.slice(0, -1)}l` }],
      [PAYLOAD, { ...HEADERS, 'webhook-timestamp': String(TIMESTAMP + 1) }],
      [PAYLOAD, { ...HEADERS, 'webhook-signature': SIGNATURE.replace('g0hM', 'g0hN') }],
    ];
    for (const [body, headers] of cases) {
      expect(failure(() => verifyWebhook(SECRET, body, headers, at)).failure).toBe('signature');
    }
    // another secret
    const other = `whsec_${Buffer.alloc(24, 1).toString('base64')}`;
    expect(failure(() => verifyWebhook(other, PAYLOAD, HEADERS, at)).failure).toBe('signature');
  });
});

/**
 * RFC 4231 §4.2, §4.3, §4.7 and §4.8 (HMAC-SHA-256 of test cases 1, 2, 6 and 7).
 *
 * portico exposes no function that computes a raw HMAC: signature.ts MACs
 * `${id}.${timestamp}.` + body, oauth/form-token.ts MACs JSON.stringify([purpose, binding,
 * issuedAt, fields]), auth/dpop-nonce.ts MACs `dpop-nonce:${window}` (truncated to 22
 * base64url characters), and the HS256 key source of auth/jwks.ts hands a WebCrypto HMAC key
 * to jose; none of these framings can carry the RFC's data, and their keys must be 24 or 32
 * bytes or more (case 2's key is 4). So these vectors guard the primitive exactly as
 * signature.ts calls it (a KeyObject from createSecretKey, the data fed in two update()
 * calls, a base64 digest); portico's own HMAC framing is held to the published Standard
 * Webhooks example above and to RFC 7515 §A.1 (test/auth/jwt.vectors.test.ts).
 */
describe('RFC 4231 §4.2, §4.3, §4.7, §4.8: HMAC-SHA-256 as signature.ts calls node:crypto', () => {
  const CASES: { name: string; key: Buffer; data: Buffer; mac: string }[] = [
    {
      name: 'Test Case 1 (§4.2)',
      key: Buffer.alloc(20, 0x0b),
      data: Buffer.from('Hi There', 'ascii'),
      mac: 'b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7',
    },
    {
      name: 'Test Case 2 (§4.3)',
      key: Buffer.from('Jefe', 'ascii'),
      data: Buffer.from('what do ya want for nothing?', 'ascii'),
      mac: '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843',
    },
    {
      name: 'Test Case 6 (§4.7, key longer than the block)',
      key: Buffer.alloc(131, 0xaa),
      data: Buffer.from('Test Using Larger Than Block-Size Key - Hash Key First', 'ascii'),
      mac: '60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54',
    },
    {
      name: 'Test Case 7 (§4.8, key and data longer than the block)',
      key: Buffer.alloc(131, 0xaa),
      data: Buffer.from(
        'This is a test using a larger than block-size key and a larger than block-size data.' +
          ' The key needs to be hashed before being used by the HMAC algorithm.',
        'ascii',
      ),
      mac: '9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2',
    },
  ];

  for (const { name, key, data, mac } of CASES) {
    it(name, () => {
      const expected = Buffer.from(mac, 'hex').toString('base64');
      const split = Math.floor(data.length / 3);
      const computed = createHmac('sha256', createSecretKey(key))
        .update(data.subarray(0, split))
        .update(data.subarray(split))
        .digest('base64');
      expect(computed).toBe(expected);
    });
  }
});
