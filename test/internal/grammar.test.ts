// The grammar of src/internal/grammar.ts, character by character against the rule each
// constant names (RFC 5234 CTL and VCHAR, Unicode Cc, RFC 9110 §5.5 field values as node
// sends them), and the two options that checked a header value for line breaks only.
import { validateHeaderValue } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { serveStatic } from '../../src/http/representation/static-files.js';
import {
  CONTROL,
  CTL,
  FIELD_VALUE,
  hasLineBreak,
  isCtlFreeName,
  isFieldValue,
  LINE_ENDING,
  QUOTABLE,
  VCHARS,
} from '../../src/internal/grammar.js';
import { createWebhookSender } from '../../src/webhook/sender.js';
import { closeAll, parseReply, rawRequest, serve } from '../helpers/http.js';

afterEach(closeAll);

/** Every BMP character, and an astral one. */
const CHARACTERS = [
  ...Array.from({ length: 0x10000 }, (_, code) => String.fromCharCode(code)),
  '😀',
];

/** The characters (as `U+…`) where `rule` and `expected` disagree: none, for a right rule. */
function disagreements(rule: (char: string) => boolean, expected: (char: string) => boolean) {
  return CHARACTERS.filter((char) => rule(char) !== expected(char)).map(
    (char) => `U+${char.codePointAt(0)!.toString(16)}`,
  );
}

/** Whether node lets `value` be sent as a header value. */
function nodeSends(value: string): boolean {
  try {
    validateHeaderValue('X-Test', value);
    return true;
  } catch {
    return false;
  }
}

describe('the grammar constants', () => {
  it('CTL is RFC 5234 CTL: %x00-1F and %x7F, nothing else', () => {
    const ctl = (char: string) => char.charCodeAt(0) < 0x20 || char === '\x7f';
    expect(disagreements((char) => CTL.test(char), ctl)).toEqual([]);
    expect(CHARACTERS.filter((char) => CTL.test(char))).toHaveLength(33);
  });

  it('CONTROL is Unicode Cc: CTL and the C1 controls', () => {
    expect(
      disagreements(
        (char) => CONTROL.test(char),
        (char) => /\p{Cc}/u.test(char),
      ),
    ).toEqual([]);
  });

  it('FIELD_VALUE accepts a character exactly when node can send it in a header', () => {
    expect(
      disagreements(
        (char) => isFieldValue(`a${char}b`),
        (char) => nodeSends(`a${char}b`),
      ),
    ).toEqual([]);
    expect(QUOTABLE).toBe(FIELD_VALUE);
    expect(isFieldValue('')).toBe(true);
    expect(isFieldValue(5)).toBe(false);
  });

  it('VCHARS is one or more of %x21-7E', () => {
    const vchar = (char: string) => char.length === 1 && char > ' ' && char < '\x7f';
    expect(disagreements((char) => VCHARS.test(char), vchar)).toEqual([]);
    expect(VCHARS.test('')).toBe(false);
    expect(VCHARS.test('ab cd')).toBe(false);
  });

  it('hasLineBreak finds CR, LF and NUL; LINE_ENDING splits at CRLF, CR and LF', () => {
    expect(['a\rb', 'a\nb', 'a\0b', 'ab'].map(hasLineBreak)).toEqual([true, true, true, false]);
    expect('a\r\nb\rc\nd\u2028e'.split(LINE_ENDING)).toEqual(['a', 'b', 'c', 'd\u2028e']);
  });

  it('isCtlFreeName takes 1 to max code units without a CTL, C1 controls included', () => {
    expect(isCtlFreeName('order.paid', 10)).toBe(true);
    expect(isCtlFreeName('x'.repeat(10), 10)).toBe(true);
    expect(isCtlFreeName('x'.repeat(11), 10)).toBe(false);
    expect(isCtlFreeName('', 10)).toBe(false);
    expect(isCtlFreeName('a\x7fb', 10)).toBe(false);
    expect(isCtlFreeName('a\tb', 10)).toBe(false);
    expect(isCtlFreeName('a\x85b', 10)).toBe(true);
    expect(isCtlFreeName('😀', 1)).toBe(false);
    expect(isCtlFreeName(['a'], 10)).toBe(false);
  });
});

// Both checked for CR, LF and NUL only: a value with another control character (or a
// character above 0xFF) was accepted at construction, then node threw ERR_INVALID_CHAR at
// every request (a 500 per file served) or every delivery.
describe('header values given as options: refused at construction unless node can send them', () => {
  it('serveStatic() refuses a header value node cannot send, and sends one it can', async () => {
    const root = new URL('../fixtures/', import.meta.url);
    for (const value of ['a\x01b', 'a\x7fb', 'a\u20acb']) {
      expect(() => serveStatic(root, { headers: { 'X-Served-By': value } })).toThrow(
        /header values must be tab, space, visible ASCII or 0x80–0xFF: no control character/,
      );
      expect(() => serveStatic(root, { cacheControl: value })).toThrow(TypeError);
    }
    const listening = await serve(
      serveStatic(root, { headers: { 'X-Served-By': 'caf\xe9\tstatic' } }),
    );
    const reply = parseReply(
      (
        await rawRequest(
          listening.port,
          'GET /tls/ca.pem HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n',
        )
      ).toString(),
    );
    expect(reply.status).toBe(200);
    expect(reply.lines).toContain('X-Served-By: caf\xe9\tstatic');
  });

  it('createWebhookSender() refuses a userAgent node cannot send', async () => {
    for (const userAgent of ['a\x01b', 'a\x7fb', 'a\u20acb']) {
      expect(() => createWebhookSender({ userAgent })).toThrow(
        '`userAgent` must be a header value (tab, space, visible ASCII, 0x80–0xFF): no control character',
      );
    }
    const sender = createWebhookSender({ userAgent: 'caf\xe9/1' });
    await sender.close();
  });
});
