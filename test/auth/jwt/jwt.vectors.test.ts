// Published vectors for the JWT verifier (src/auth/jwt/jwt.ts, src/auth/jwt/verify.ts, the key
// sources of src/auth/jwt/jwks.ts). Every expected value below is typed in from the RFC text, not
// produced by jose or by portico; the first test of each block re-derives the vector with
// node:crypto so that a transcription slip fails loudly instead of testing the wrong thing.
import {
  createHmac,
  createPrivateKey,
  createPublicKey,
  type JsonWebKey,
  sign,
  verify,
} from 'node:crypto';
import { errors } from 'jose';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { JwtError } from '../../../src/auth/jwt/error.js';
import { type KeySourceOptions, resolveKeySource } from '../../../src/auth/jwt/jwks.js';
import { createJwtVerifier } from '../../../src/auth/jwt/jwt.js';
import { type CoreVerifyOptions, verifyCompactJwt } from '../../../src/auth/jwt/verify.js';
import type { Jwk } from '../../../src/core/jwt-types.js';

afterEach(() => {
  vi.useRealTimers();
});

// --- RFC 7515 Appendix A.1 / A.2: the shared JWS Payload --------------------------------

/** The JWS Payload of RFC 7515 §A.1.1 (reused by §A.2.1), CR LF and spaces included. */
const A1_PAYLOAD_JSON =
  '{"iss":"joe",\r\n "exp":1300819380,\r\n "http://example.com/is_root":true}';
/** BASE64URL(JWS Payload), RFC 7515 §A.1.1. */
const A1_PAYLOAD_B64 =
  'eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ';
/** The claims the payload holds. */
const A1_CLAIMS = { iss: 'joe', exp: 1300819380, 'http://example.com/is_root': true };
/** `exp` of the example: 2011-03-22T18:43:00Z. */
const EXP_MS = 1300819380 * 1000;
/** A moment when the example tokens were still valid (a minute before `exp`). */
const BEFORE_EXP_MS = EXP_MS - 60_000;

// --- RFC 7515 Appendix A.1 (HS256) ------------------------------------------------------

/** The JWS Protected Header of RFC 7515 §A.1.1. */
const A1_HEADER_JSON = '{"typ":"JWT",\r\n "alg":"HS256"}';
/** BASE64URL(UTF8(JWS Protected Header)), RFC 7515 §A.1.1. */
const A1_HEADER_B64 = 'eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9';
/** The HMAC key of RFC 7515 §A.1.1, as the JWK the appendix prints. */
const A1_JWK = {
  kty: 'oct',
  k: 'AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtMN3Yj0iPS4hcgUuTwjAzZr1Z9CAow',
} as const;
/** The HMAC SHA-256 value of RFC 7515 §A.1.1, as the octet array the appendix prints. */
const A1_SIGNATURE_OCTETS = [
  116, 24, 223, 180, 151, 153, 224, 37, 79, 250, 96, 125, 216, 173, 187, 186, 22, 212, 37, 77, 105,
  214, 191, 240, 91, 88, 5, 88, 83, 132, 141, 121,
];
/** BASE64URL(JWS Signature), RFC 7515 §A.1.1. */
const A1_SIGNATURE_B64 = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk';
/** The complete JWS Compact Serialization of RFC 7515 §A.1.1. */
const A1_JWS =
  'eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9' +
  '.' +
  'eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ' +
  '.' +
  'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk';

const A1_KEY_BYTES = new Uint8Array(Buffer.from(A1_JWK.k, 'base64url'));

// --- RFC 7515 Appendix A.2 (RS256) ------------------------------------------------------

/** The RSA key of RFC 7515 §A.2.1, as the JWK the appendix prints. */
const A2_JWK = {
  kty: 'RSA',
  n:
    'ofgWCuLjybRlzo0tZWJjNiuSfb4p4fAkd_wWJcyQoTbji9k0l8W26mPddx' +
    'HmfHQp-Vaw-4qPCJrcS2mJPMEzP1Pt0Bm4d4QlL-yRT-SFd2lZS-pCgNMs' +
    'D1W_YpRPEwOWvG6b32690r2jZ47soMZo9wGzjb_7OMg0LOL-bSf63kpaSH' +
    'SXndS5z5rexMdbBYUsLA9e-KXBdQOS-UTo7WTBEMa2R2CapHg665xsmtdV' +
    'MTBQY4uDZlxvb3qCo5ZwKh9kG4LT6_I5IhlJH7aGhyxXFvUK-DWNmoudF8' +
    'NAco9_h9iaGNj8q2ethFkMLs91kzk2PAcDTW9gb54h4FRWyuXpoQ',
  e: 'AQAB',
  d:
    'Eq5xpGnNCivDflJsRQBXHx1hdR1k6Ulwe2JZD50LpXyWPEAeP88vLNO97I' +
    'jlA7_GQ5sLKMgvfTeXZx9SE-7YwVol2NXOoAJe46sui395IW_GO-pWJ1O0' +
    'BkTGoVEn2bKVRUCgu-GjBVaYLU6f3l9kJfFNS3E0QbVdxzubSu3Mkqzjkn' +
    '439X0M_V51gfpRLI9JYanrC4D4qAdGcopV_0ZHHzQlBjudU2QvXt4ehNYT' +
    'CBr6XCLQUShb1juUO1ZdiYoFaFQT5Tw8bGUl_x_jTj3ccPDVZFD9pIuhLh' +
    'BOneufuBiB4cS98l2SR_RQyGWSeWjnczT0QU91p1DhOVRuOopznQ',
  p:
    '4BzEEOtIpmVdVEZNCqS7baC4crd0pqnRH_5IB3jw3bcxGn6QLvnEtfdUdi' +
    'YrqBdss1l58BQ3KhooKeQTa9AB0Hw_Py5PJdTJNPY8cQn7ouZ2KKDcmnPG' +
    'BY5t7yLc1QlQ5xHdwW1VhvKn-nXqhJTBgIPgtldC-KDV5z-y2XDwGUc',
  q:
    'uQPEfgmVtjL0Uyyx88GZFF1fOunH3-7cepKmtH4pxhtCoHqpWmT8YAmZxa' +
    'ewHgHAjLYsp1ZSe7zFYHj7C6ul7TjeLQeZD_YwD66t62wDmpe_HlB-TnBA' +
    '-njbglfIsRLtXlnDzQkv5dTltRJ11BKBBypeeF6689rjcJIDEz9RWdc',
  dp:
    'BwKfV3Akq5_MFZDFZCnW-wzl-CCo83WoZvnLQwCTeDv8uzluRSnm71I3QC' +
    'LdhrqE2e9YkxvuxdBfpT_PI7Yz-FOKnu1R6HsJeDCjn12Sk3vmAktV2zb3' +
    '4MCdy7cpdTh_YVr7tss2u6vneTwrA86rZtu5Mbr1C1XsmvkxHQAdYo0',
  dq:
    'h_96-mK1R_7glhsum81dZxjTnYynPbZpHziZjeeHcXYsXaaMwkOlODsWa7' +
    'I9xXDoRwbKgB719rrmI2oKr6N3Do9U0ajaHF-NKJnwgjMd2w9cjz3_-kyN' +
    'lxAr2v4IKhGNpmM5iIgOS1VZnOZ68m6_pbLBSp3nssTdlqvd0tIiTHU',
  qi:
    'IYd7DHOhrWvxkwPQsRM2tOgrjbcrfvtQJipd-DlcxyVuuM9sQLdgjVk2oy' +
    '26F0EmpScGLq2MowX7fhd_QJQ3ydy5cY7YIBi87w93IKLEdfnbJtoOPLUW' +
    '0ITrJReOgo1cq9SbsxYawBgfp_gh6A5603k2-ZQwVK0JKSHuLFkuQ3U',
} as const;
/** The public half, the only part a verifier is given. */
const A2_PUBLIC_JWK = { kty: A2_JWK.kty, n: A2_JWK.n, e: A2_JWK.e } satisfies Jwk;
/** BASE64URL(UTF8(JWS Protected Header)) of `{"alg":"RS256"}`, RFC 7515 §A.2.1. */
const A2_HEADER_B64 = 'eyJhbGciOiJSUzI1NiJ9';
/** BASE64URL(JWS Signature), RFC 7515 §A.2.1. */
const A2_SIGNATURE_B64 =
  'cC4hiUPoj9Eetdgtv3hF80EGrhuB__dzERat0XF9g2VtQgr9PJbu3XOiZj5RZmh7' +
  'AAuHIm4Bh-0Qc_lF5YKt_O8W2Fp5jujGbds9uJdbF9CUAr7t1dnZcAcQjbKBYNX4' +
  'BAynRFdiuB--f_nZLgrnbyTyWzO75vRK5h6xBArLIARNPvkSjtQBMHlb1L07Qe7K' +
  '0GarZRmB_eSN9383LcOLn6_dO--xi12jzDwusC-eOkHWEsqtFZESc6BfI7noOPqv' +
  'hJ1phCnvWh6IeYI2w9QOYEUipUTI8np6LbgGY9Fs98rqVt5AXLIhWkWywlVmtVrB' +
  'p0igcN_IoypGlUPQGe77Rw';
/** The complete JWS Compact Serialization of RFC 7515 §A.2.1. */
const A2_JWS = `${A2_HEADER_B64}.${A1_PAYLOAD_B64}.${A2_SIGNATURE_B64}`;

// --- helpers ----------------------------------------------------------------------------

/** The verification steps `createJwtVerifier` runs, minus `aud` (the examples have none). */
function coreOptions(algorithms: string[]): CoreVerifyOptions {
  return {
    subject: 'access token',
    maxTokenLength: 8192,
    clockTolerance: 5_000,
    jose: { algorithms, issuer: 'joe', clockTolerance: 5, requiredClaims: ['exp'] },
  };
}

/** Runs the clock at `ms` (only `Date`: promises and timers keep running). */
function clockAt(ms: number) {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(ms);
}

async function refusal(promise: Promise<unknown>): Promise<JwtError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(JwtError);
  return error as JwtError;
}

/** `jws` with byte `index` of its decoded signature XORed with `mask`, re-encoded. */
function withSignatureByteChanged(jws: string, index: number, mask = 0x01): string {
  const dot = jws.lastIndexOf('.');
  const signature = Buffer.from(jws.slice(dot + 1), 'base64url');
  signature[index]! ^= mask;
  return `${jws.slice(0, dot + 1)}${signature.toString('base64url')}`;
}

// --- the tests --------------------------------------------------------------------------

describe('RFC 7515 Appendix A.1 (Example JWS Using HMAC SHA-256), §A.1.1 and §A.1.2', () => {
  const hs256 = () => resolveKeySource('test', { secret: A1_KEY_BYTES }).source;

  it('the typed-in vector is self-consistent (checked with node:crypto)', () => {
    expect(Buffer.from(A1_HEADER_JSON, 'utf8').toString('base64url')).toBe(A1_HEADER_B64);
    expect(Buffer.from(A1_PAYLOAD_JSON, 'utf8').toString('base64url')).toBe(A1_PAYLOAD_B64);
    expect(A1_KEY_BYTES.byteLength).toBe(64);
    const mac = createHmac('sha256', A1_KEY_BYTES)
      .update(`${A1_HEADER_B64}.${A1_PAYLOAD_B64}`, 'ascii')
      .digest();
    expect([...mac]).toEqual(A1_SIGNATURE_OCTETS);
    expect(mac.toString('base64url')).toBe(A1_SIGNATURE_B64);
    expect(A1_JWS).toBe(`${A1_HEADER_B64}.${A1_PAYLOAD_B64}.${A1_SIGNATURE_B64}`);
    expect(JSON.parse(A1_PAYLOAD_JSON)).toEqual(A1_CLAIMS);
  });

  it('verifyCompactJwt with portico’s HMAC key source accepts the JWS while it was valid', async () => {
    clockAt(BEFORE_EXP_MS);
    const { payload, protectedHeader } = await verifyCompactJwt(
      A1_JWS,
      hs256().key,
      coreOptions(['HS256']),
    );
    expect(payload).toEqual(A1_CLAIMS);
    expect(protectedHeader).toEqual({ typ: 'JWT', alg: 'HS256' });
  });

  it('today it is refused as expired: the signature and the claims passed, only `exp` failed', async () => {
    const error = await refusal(verifyCompactJwt(A1_JWS, hs256().key, coreOptions(['HS256'])));
    expect(error.kind).toBe('expired');
    expect(error.code).toBe('ERR_JWT_EXPIRED');
    expect(error.cause).toBeInstanceOf(errors.JWTExpired);
  });

  it('one byte of the signature changed: refused as invalid (signature), never as expired', async () => {
    for (const index of [0, 15, 31]) {
      const forged = withSignatureByteChanged(A1_JWS, index);
      expect(forged).not.toBe(A1_JWS);
      clockAt(BEFORE_EXP_MS);
      const before = await refusal(verifyCompactJwt(forged, hs256().key, coreOptions(['HS256'])));
      expect(before.kind).toBe('invalid');
      expect(before.cause).toBeInstanceOf(errors.JWSSignatureVerificationFailed);
      vi.useRealTimers();
      const now = await refusal(verifyCompactJwt(forged, hs256().key, coreOptions(['HS256'])));
      expect(now.kind).toBe('invalid');
    }
  });

  it('createJwtVerifier({ secret }): the signature passes, then the missing `aud` refuses it', async () => {
    // portico always requires `audience` (RFC 8725 §3.9) and the example carries no `aud`:
    // jose checks claims only after the signature verified, so a refusal for the missing
    // `aud` claim is the proof that the full verifier accepted the published signature.
    clockAt(BEFORE_EXP_MS);
    const verifier = createJwtVerifier({
      secret: A1_KEY_BYTES,
      issuer: 'joe',
      audience: 'https://api.example.com',
    });
    const error = await refusal(verifier.verify(A1_JWS));
    expect(error.kind).toBe('invalid');
    expect(error.cause).toBeInstanceOf(errors.JWTClaimValidationFailed);
    expect(error.cause).toMatchObject({ claim: 'aud', reason: 'missing' });

    const forged = await refusal(verifier.verify(withSignatureByteChanged(A1_JWS, 0)));
    expect(forged.kind).toBe('invalid');
    expect(forged.cause).toBeInstanceOf(errors.JWSSignatureVerificationFailed);
  });
});

describe('RFC 7515 Appendix A.2 (Example JWS Using RSASSA-PKCS1-v1_5 SHA-256), §A.2.1 and §A.2.2', () => {
  it('the typed-in vector is self-consistent (checked with node:crypto)', () => {
    expect(Buffer.from('{"alg":"RS256"}', 'utf8').toString('base64url')).toBe(A2_HEADER_B64);
    const input = Buffer.from(`${A2_HEADER_B64}.${A1_PAYLOAD_B64}`, 'ascii');
    const privateKey = createPrivateKey({ key: A2_JWK as JsonWebKey, format: 'jwk' });
    const publicKey = createPublicKey({ key: A2_PUBLIC_JWK as JsonWebKey, format: 'jwk' });
    expect(createPublicKey(privateKey).export({ format: 'jwk' })).toEqual(A2_PUBLIC_JWK);
    // PKCS #1 v1.5 is deterministic: the published key must reproduce the published signature
    expect(sign('sha256', input, privateKey).toString('base64url')).toBe(A2_SIGNATURE_B64);
    expect(verify('sha256', input, publicKey, Buffer.from(A2_SIGNATURE_B64, 'base64url'))).toBe(
      true,
    );
  });

  const sources = {
    'publicKey: the public JWK': { publicKey: A2_PUBLIC_JWK },
    'publicKey: a KeyObject of it': {
      publicKey: createPublicKey({ key: A2_PUBLIC_JWK as JsonWebKey, format: 'jwk' }),
    },
    'jwks: { keys: [the public JWK] }': { jwks: { keys: [A2_PUBLIC_JWK] } },
  } satisfies Record<string, KeySourceOptions>;

  for (const [name, options] of Object.entries(sources)) {
    it(`verifyCompactJwt with portico’s key source (${name}) accepts the JWS while it was valid`, async () => {
      clockAt(BEFORE_EXP_MS);
      const { source } = resolveKeySource('test', options);
      const { payload, protectedHeader } = await verifyCompactJwt(
        A2_JWS,
        source.key,
        coreOptions(['RS256']),
      );
      expect(payload).toEqual(A1_CLAIMS);
      expect(protectedHeader).toEqual({ alg: 'RS256' });
    });
  }

  it('today it is refused as expired: the signature and the claims passed, only `exp` failed', async () => {
    const { source } = resolveKeySource('test', { publicKey: A2_PUBLIC_JWK });
    const error = await refusal(verifyCompactJwt(A2_JWS, source.key, coreOptions(['RS256'])));
    expect(error.kind).toBe('expired');
    expect(error.cause).toBeInstanceOf(errors.JWTExpired);
  });

  it('one byte of the signature changed: refused as invalid (signature)', async () => {
    const { source } = resolveKeySource('test', { publicKey: A2_PUBLIC_JWK });
    for (const index of [0, 128, 255]) {
      clockAt(BEFORE_EXP_MS);
      const forged = withSignatureByteChanged(A2_JWS, index);
      const error = await refusal(verifyCompactJwt(forged, source.key, coreOptions(['RS256'])));
      expect(error.kind).toBe('invalid');
      expect(error.cause).toBeInstanceOf(errors.JWSSignatureVerificationFailed);
    }
  });

  it('createJwtVerifier({ publicKey }): the signature passes, then the missing `aud` refuses it', async () => {
    clockAt(BEFORE_EXP_MS);
    const verifier = createJwtVerifier({
      publicKey: A2_PUBLIC_JWK,
      issuer: 'joe',
      audience: 'https://api.example.com',
    });
    const error = await refusal(verifier.verify(A2_JWS));
    expect(error.kind).toBe('invalid');
    expect(error.cause).toBeInstanceOf(errors.JWTClaimValidationFailed);
    expect(error.cause).toMatchObject({ claim: 'aud', reason: 'missing' });

    const forged = await refusal(verifier.verify(withSignatureByteChanged(A2_JWS, 0)));
    expect(forged.cause).toBeInstanceOf(errors.JWSSignatureVerificationFailed);
  });

  it('the HS256 example is not accepted under the RSA key, nor RS256 under the HMAC secret', async () => {
    clockAt(BEFORE_EXP_MS);
    const rsa = resolveKeySource('test', { publicKey: A2_PUBLIC_JWK }).source;
    const hmac = resolveKeySource('test', { secret: A1_KEY_BYTES }).source;
    expect((await refusal(verifyCompactJwt(A1_JWS, rsa.key, coreOptions(['RS256'])))).kind).toBe(
      'invalid',
    );
    expect((await refusal(verifyCompactJwt(A2_JWS, hmac.key, coreOptions(['HS256'])))).kind).toBe(
      'invalid',
    );
  });
});

/**
 * RFC 4648 §10 test vectors in the URL-safe alphabet without padding (§5, and RFC 7515 §2
 * "Base64url Encoding"): the shape check of jwt-verify.ts must take each published encoding
 * as the one canonical spelling of its bytes, and refuse padded or non-canonical spellings.
 * A segment that passes the shape check reaches jose (whose refusal then becomes the
 * `cause`); one refused by the shape check has no `cause`.
 */
describe('RFC 4648 §10 (Test Vectors) as base64url JWS segments, jwt-verify.ts shape check', () => {
  /** [plain text, BASE64 as printed in §10]. */
  const VECTORS: [string, string][] = [
    ['', ''],
    ['f', 'Zg=='],
    ['fo', 'Zm8='],
    ['foo', 'Zm9v'],
    ['foob', 'Zm9vYg=='],
    ['fooba', 'Zm9vYmE='],
    ['foobar', 'Zm9vYmFy'],
  ];
  const unpadded = (b64: string) => b64.replace(/=+$/, '');
  const hs256 = () => resolveKeySource('test', { secret: A1_KEY_BYTES }).source;
  const withSignature = (segment: string) => `${A1_HEADER_B64}.${A1_PAYLOAD_B64}.${segment}`;

  it('the typed-in vectors are the encodings of their text (node:crypto Buffer)', () => {
    for (const [text, b64] of VECTORS) {
      expect(Buffer.from(text, 'latin1').toString('base64')).toBe(b64);
      expect(Buffer.from(text, 'latin1').toString('base64url')).toBe(unpadded(b64));
      expect(Buffer.from(unpadded(b64), 'base64url').toString('latin1')).toBe(text);
    }
  });

  for (const [text, b64] of VECTORS.filter(([text]) => text !== '')) {
    it(`BASE64URL("${text}") = "${unpadded(b64)}" passes the shape check`, async () => {
      const error = await refusal(
        verifyCompactJwt(withSignature(unpadded(b64)), hs256().key, coreOptions(['HS256'])),
      );
      expect(error.kind).toBe('invalid');
      // reached jose: refused for the signature, not for the spelling of the segment
      expect(error.cause).toBeInstanceOf(errors.JWSSignatureVerificationFailed);
    });
  }

  it('the empty encoding of "" is refused as a signature segment (a JWS signature is never empty)', async () => {
    const error = await refusal(
      verifyCompactJwt(withSignature(''), hs256().key, coreOptions(['HS256'])),
    );
    expect(error.cause).toBeUndefined();
  });

  /** Padded (RFC 7515 §2 forbids `=`) and non-canonical (§3.5: unused bits not zero). */
  const REFUSED: [string, string][] = [
    ['"f" padded', 'Zg=='],
    ['"fo" padded', 'Zm8='],
    ['"foob" padded', 'Zm9vYg=='],
    ['"f" with non-zero unused bits', 'Zh'],
    ['"fo" with non-zero unused bits', 'Zm9'],
    ['"foob" with non-zero unused bits', 'Zm9vYh'],
    ['"fooba" with non-zero unused bits', 'Zm9vYmF'],
    ['a length of 4n + 1', 'Zm9vY'],
  ];
  for (const [name, segment] of REFUSED) {
    it(`${name} ("${segment}") is refused before any parsing`, async () => {
      const error = await refusal(
        verifyCompactJwt(withSignature(segment), hs256().key, coreOptions(['HS256'])),
      );
      expect(error.kind).toBe('invalid');
      expect(error.cause).toBeUndefined();
    });
  }
});
