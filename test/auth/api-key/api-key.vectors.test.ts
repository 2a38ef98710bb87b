// Published vectors for the API key format (src/auth/api-key/api-key.ts): the CRC-32 behind the
// checksum and the SHA-256 behind hashApiKey. The CRC-32 oracle below is written from the
// algorithm's definition (reflected polynomial 0xEDB88320, initial value and final XOR
// 0xFFFFFFFF) and pinned to the published check value, so it does not share code with the
// `zlib.crc32` that api-key.ts calls.
import { crc32 } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import {
  generateApiKey,
  hashApiKey,
  isWellFormedApiKey,
} from '../../../src/auth/api-key/api-key.js';

/**
 * The check value of CRC-32 (ISO-HDLC / ITU-T V.42 / ISO 3309, the CRC of RFC 1952 §8 gzip
 * and of zlib): CRC-32 of the ASCII octets "123456789" is 0xCBF43926 (the "check" entry of
 * the CRC-32 parameter set, Williams' "A Painless Guide to CRC Error Detection Algorithms"
 * and the CRC RevEng catalogue).
 */
const CHECK_INPUT = '123456789';
const CHECK_VALUE = 0xcbf43926;

/** CRC-32, bit by bit, from its definition. */
function referenceCrc32(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of bytes) {
    crc ^= byte;
    for (let bit = 0; bit < 8; bit++) crc = crc & 1 ? (crc >>> 1) ^ 0xedb88320 : crc >>> 1;
  }
  return (crc ^ 0xffffffff) >>> 0;
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** The format's checksum: the CRC-32 of `<prefix>_<secret>` in 6 base62 digits, big-endian. */
function formatChecksum(body: string): string {
  let n = referenceCrc32(Buffer.from(body, 'latin1'));
  let out = '';
  for (let i = 0; i < 6; i++) {
    out = BASE62[n % 62] + out;
    n = Math.floor(n / 62);
  }
  expect(n).toBe(0); // 62^6 > 2^32: six digits always suffice
  return out;
}

describe('CRC-32 check value ("123456789" → 0xCBF43926), API key checksums', () => {
  it('the reference CRC-32 gives the published check value', () => {
    expect(referenceCrc32(Buffer.from(CHECK_INPUT, 'ascii'))).toBe(CHECK_VALUE);
  });

  it('zlib.crc32, the function api-key.ts calls, gives the published check value', () => {
    expect(crc32(CHECK_INPUT)).toBe(CHECK_VALUE);
    expect(crc32(Buffer.from(CHECK_INPUT, 'ascii'))).toBe(CHECK_VALUE);
  });

  it('the check value in the format’s 6 base62 digits', () => {
    // 0xCBF43926 = 3421780262 = 3·62^5 + 45·62^4 + 35·62^3 + 27·62^2 + 22·62 + 14
    expect(3 * 62 ** 5 + 45 * 62 ** 4 + 35 * 62 ** 3 + 27 * 62 ** 2 + 22 * 62 + 14).toBe(
      CHECK_VALUE,
    );
    expect(formatChecksum(CHECK_INPUT)).toBe('3jZRME');
  });

  /** Bodies typed in here (`<prefix>_` and 32 base62 characters), none produced by portico. */
  const BODIES = [
    'ptk_00000000000000000000000000000000',
    'ptk_zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz',
    'ptk_0123456789ABCDEFGHIJKLMNOPQRSTUV',
    'ptk_WXYZabcdefghijklmnopqrstuvwxyz01',
    'ptk_12345678912345678912345678912345',
  ];

  for (const body of BODIES) {
    it(`${body}: accepted with the CRC-32 of its body as checksum, refused with any other`, () => {
      expect(body).toMatch(/^ptk_[0-9A-Za-z]{32}$/);
      const checksum = formatChecksum(body);
      expect(isWellFormedApiKey(body + checksum)).toBe(true);
      // every single-character change of the checksum is caught (a CRC, unlike a weak sum)
      for (let i = 0; i < 6; i++) {
        for (const c of ['0', 'Z', 'z']) {
          if (c === checksum[i]) continue;
          const wrong = checksum.slice(0, i) + c + checksum.slice(i + 1);
          expect(isWellFormedApiKey(body + wrong)).toBe(false);
        }
      }
    });
  }

  it('a body with another prefix is checked the same way', () => {
    const body = 'ptkt_0123456789ABCDEFGHIJKLMNOPQRSTUV';
    expect(isWellFormedApiKey(body + formatChecksum(body), { prefix: 'ptkt' })).toBe(true);
    expect(isWellFormedApiKey(body + formatChecksum(body))).toBe(false); // not the default prefix
  });

  it('generated keys carry the reference CRC-32 of their body', () => {
    for (let i = 0; i < 200; i++) {
      const key = generateApiKey();
      expect(key.slice(-6)).toBe(formatChecksum(key.slice(0, -6)));
    }
    const key = generateApiKey({ prefix: 'acme' });
    expect(key.slice(-6)).toBe(formatChecksum(key.slice(0, -6)));
  });
});

/**
 * SHA-256 of "abc" and of the two-block message: FIPS 180-2 Appendix B.1 and B.2 (the same
 * values as NIST's FIPS 180-4 "Examples with Intermediate Values", SHA256.pdf); SHA-256 of the
 * empty message: NIST CAVP SHAVS SHA256ShortMsg.rsp, `Len = 0`. hashApiKey is the base64url
 * of the digest.
 */
describe('FIPS 180-2 Appendix B.1 / B.2 (SHA-256 "abc", two-block message), hashApiKey', () => {
  const VECTORS: [string, string][] = [
    ['abc', 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad'],
    [
      'abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq',
      '248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1',
    ],
    ['', 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'],
  ];
  for (const [message, digest] of VECTORS) {
    it(`hashApiKey(${JSON.stringify(message)}) is the base64url of SHA-256 ${digest.slice(0, 8)}…`, () => {
      expect(hashApiKey(message)).toBe(Buffer.from(digest, 'hex').toString('base64url'));
    });
  }
});
