// Published vectors for the Basic credential decoder (src/auth/basic.ts). portico has no
// base64 helper of its own (it calls Buffer); parseBasicCredentials is where it decodes
// base64 from the wire, so the RFC 4648 vectors are run through it. Expected values are typed
// in from the RFC texts; the first test of each block re-derives them with Buffer.
import { describe, expect, it } from 'vitest';
import { parseBasicCredentials } from '../../src/auth/basic.js';

describe('RFC 7617 §2 (Aladdin / open sesame) and §2.1 (test / 123£, charset UTF-8)', () => {
  const VECTORS: [string, string, string][] = [
    // §2: user-id "Aladdin", password "open sesame"
    ['Aladdin', 'open sesame', 'QWxhZGRpbjpvcGVuIHNlc2FtZQ=='],
    // §2.1: user-id "test", password "123" followed by U+00A3 POUND SIGN, in UTF-8
    ['test', '123\u00a3', 'dGVzdDoxMjPCow=='],
  ];

  it('the typed-in vectors are the UTF-8 base64 of user-id ":" password (Buffer)', () => {
    for (const [user, password, encoded] of VECTORS) {
      expect(Buffer.from(`${user}:${password}`, 'utf8').toString('base64')).toBe(encoded);
    }
  });

  for (const [username, password, encoded] of VECTORS) {
    it(`"Basic ${encoded}" decodes to ${JSON.stringify([username, password])}`, () => {
      expect(parseBasicCredentials(`Basic ${encoded}`)).toEqual({ username, password });
      // the scheme name is case-insensitive (RFC 9110 §11.1)
      expect(parseBasicCredentials(`basic ${encoded}`)).toEqual({ username, password });
    });
  }
});

/**
 * RFC 4648 §10: BASE64("") = "", "f" = "Zg==", … "foobar" = "Zm9vYmFy". None of them holds a
 * colon, so each is put behind "YTpi", the base64 of the 3 octets "a:b": a whole quantum, so
 * the concatenation is the base64 of "a:b" followed by the vector's text, and the decoded
 * password must be "b" followed by the published plain text.
 */
describe('RFC 4648 §10 (Test Vectors), BASE64 (§4), through parseBasicCredentials', () => {
  const VECTORS: [string, string][] = [
    ['', ''],
    ['f', 'Zg=='],
    ['fo', 'Zm8='],
    ['foo', 'Zm9v'],
    ['foob', 'Zm9vYg=='],
    ['fooba', 'Zm9vYmE='],
    ['foobar', 'Zm9vYmFy'],
  ];
  const HEAD = 'YTpi';

  it('the typed-in vectors are the encodings of their text, and "YTpi" is BASE64("a:b") (Buffer)', () => {
    expect(Buffer.from('a:b', 'latin1').toString('base64')).toBe(HEAD);
    for (const [text, encoded] of VECTORS) {
      expect(Buffer.from(text, 'latin1').toString('base64')).toBe(encoded);
      expect(Buffer.from(`a:b${text}`, 'latin1').toString('base64')).toBe(HEAD + encoded);
    }
  });

  for (const [text, encoded] of VECTORS) {
    it(`BASE64("${text}") = "${encoded}": "Basic ${HEAD}${encoded}" decodes to a / b${text}`, () => {
      expect(parseBasicCredentials(`Basic ${HEAD}${encoded}`)).toEqual({
        username: 'a',
        password: `b${text}`,
      });
    });
  }

  /**
   * Other spellings of the same octets: padding left out (§3.2 requires it unless the
   * referring specification says otherwise, and RFC 7617 does not) and non-zero pad bits
   * (§3.5: canonical encodings only).
   */
  const REFUSED: [string, string][] = [
    ['"f" without padding', 'Zg'],
    ['"fo" without padding', 'Zm8'],
    ['"foob" without padding', 'Zm9vYg'],
    ['"f" with one "=" only', 'Zg='],
    ['"f" with non-zero pad bits', 'Zh=='],
    ['"fo" with non-zero pad bits', 'Zm9='],
    ['"foob" with non-zero pad bits', 'Zm9vYh=='],
    ['"fooba" with non-zero pad bits', 'Zm9vYmF='],
  ];
  for (const [name, encoded] of REFUSED) {
    it(`${name} ("${HEAD}${encoded}") is refused`, () => {
      expect(parseBasicCredentials(`Basic ${HEAD}${encoded}`)).toBeUndefined();
    });
  }

  it('the empty credential (BASE64("") alone) is refused: there is no user-id', () => {
    expect(parseBasicCredentials('Basic ')).toBeUndefined();
  });
});
