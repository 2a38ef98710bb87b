// Property tests of the WWW-Authenticate challenge builder: challenge() and quoteParam().

import { validateHeaderValue } from 'node:http';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { authenticate } from '../../src/auth/authenticate.js';
import { challenge, quoteParam } from '../../src/auth/authenticator.js';
import { basicAuth } from '../../src/auth/basic.js';
import { sendError } from '../../src/core/problem.js';
import { silentLogger } from '../../src/diagnostics/index.js';
import { caseTally, controlChar, inserting, latin1 } from '../helpers/arbitraries.js';
import { fakeRequest, fakeResponse } from '../helpers/fake-http.js';

const RUNS = { numRuns: 1000 };

const TCHAR = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
const token = fc.string({ unit: fc.constantFrom(...TCHAR), minLength: 1, maxLength: 12 });

/** Characters a quoted-string can carry once escaped (RFC 9110 §5.6.4, less HTAB). */
const quotable = fc.string({
  unit: fc.oneof(
    fc.constantFrom('"', '\\', ' ', ',', '=', ';'),
    fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
    fc.integer({ min: 0x80, max: 0xff }).map((c) => String.fromCharCode(c)),
  ),
  maxLength: 40,
});

/** Parameter lists with distinct (case-insensitively) names. */
const paramList = fc.uniqueArray(fc.tuple(token, quotable), {
  maxLength: 5,
  selector: ([name]) => name.toLowerCase(),
});

const isTchar = (c: string) => TCHAR.includes(c);

/** What no quoted-string can carry: a control other than tab, or a character above U+00FF. */
const UNQUOTABLE = /[^\t\x20-\x7e\x80-\xff]/;
/** The controls no header value may carry: all but tab. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: none but tab may come through
const CONTROL_OUT = /[\u0000-\u0008\u000a-\u001f\u007f]/;

/** Characters above U+00FF that a header cannot carry: BMP, astral, a lone surrogate. */
const aboveLatin1 = fc.oneof(
  fc.constantFrom('Ā', '€', '\u2028', '\uFEFF', '😀', '\uD800'),
  fc.integer({ min: 0x100, max: 0xffff }).map((c) => String.fromCharCode(c)),
);

/**
 * Parameter values, half of them with something unquotable put in at random places: mostly
 * CR, LF or CRLF, or another control, now and then a character above U+00FF.
 */
const paramValue = fc.oneof(
  { weight: 4, arbitrary: latin1(30) },
  { weight: 3, arbitrary: inserting(latin1(30), controlChar) },
  { weight: 1, arbitrary: inserting(latin1(30), fc.oneof(controlChar, aboveLatin1)) },
);

/**
 * A strict parser of one challenge (RFC 9110 §11.3): auth-scheme [ 1*SP #auth-param ], each
 * auth-param `token BWS "=" BWS ( token / quoted-string )`. Throws on anything else.
 */
function parseChallenge(text: string): { scheme: string; params: [string, string][] } {
  let i = 0;
  const readToken = () => {
    const start = i;
    while (i < text.length && isTchar(text[i]!)) i++;
    if (i === start) throw new SyntaxError(`token expected at ${start}`);
    return text.slice(start, i);
  };
  const skip = (chars: string) => {
    while (i < text.length && chars.includes(text[i]!)) i++;
  };
  const scheme = readToken();
  const params: [string, string][] = [];
  if (i === text.length) return { scheme, params };
  if (text[i] !== ' ') throw new SyntaxError('SP expected after the scheme');
  skip(' ');
  for (;;) {
    const name = readToken();
    skip(' \t');
    if (text[i] !== '=') throw new SyntaxError('"=" expected');
    i++;
    skip(' \t');
    let value = '';
    if (text[i] === '"') {
      i++;
      for (;;) {
        if (i >= text.length) throw new SyntaxError('unterminated quoted-string');
        const c = text[i]!;
        const code = c.charCodeAt(0);
        if (c === '"') {
          i++;
          break;
        }
        if (c === '\\') {
          const next = text[i + 1];
          if (next === undefined) throw new SyntaxError('dangling backslash');
          const n = next.charCodeAt(0);
          if (!(n === 0x09 || (n >= 0x20 && n <= 0x7e) || (n >= 0x80 && n <= 0xff))) {
            throw new SyntaxError('bad quoted-pair');
          }
          value += next;
          i += 2;
          continue;
        }
        // qdtext = HTAB / SP / %x21 / %x23-5B / %x5D-7E / obs-text
        if (!(code === 0x09 || (code >= 0x20 && code <= 0x7e) || (code >= 0x80 && code <= 0xff))) {
          throw new SyntaxError(`bad qdtext U+${code.toString(16)}`);
        }
        value += c;
        i++;
      }
    } else {
      value = readToken();
    }
    params.push([name, value]);
    skip(' \t');
    if (i === text.length) return { scheme, params };
    if (text[i] !== ',') throw new SyntaxError('"," expected');
    i++;
    skip(' \t');
  }
}

const unquote = (quoted: string) => {
  const parsed = parseChallenge(`X p=${quoted}`);
  return parsed.params[0]![1];
};

describe('quoteParam (property)', () => {
  it('round-trips every value it accepts through a strict quoted-string parser', () => {
    const tally = caseTally();
    fc.assert(
      fc.property(quotable, (value) => {
        tally.case();
        const quoted = quoteParam(value);
        tally.hit('checked');
        expect(unquote(quoted)).toBe(value);
      }),
      RUNS,
    );
    tally.expectShares({ checked: 1 });
  });

  it('on any string: a quoted-string or a TypeError, nothing else', () => {
    const tally = caseTally();
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 40 }), (value) => {
        tally.case();
        let outcome: { quoted: string } | { error: unknown };
        try {
          outcome = { quoted: quoteParam(value) };
        } catch (error) {
          outcome = { error };
        }
        tally.hit('checked');
        if ('quoted' in outcome) {
          expect(outcome.quoted.startsWith('"') && outcome.quoted.endsWith('"')).toBe(true);
          expect(outcome.quoted).not.toMatch(CONTROL_OUT);
        } else {
          expect(outcome.error).toBeInstanceOf(TypeError);
        }
      }),
      RUNS,
    );
    tally.expectShares({ checked: 1 });
  });

  it('refuses exactly the values holding a control or a character above U+00FF, and lets no CR, LF or control through', () => {
    const tally = caseTally();
    fc.assert(
      fc.property(paramValue, (value) => {
        tally.case();
        let quoted: string;
        try {
          quoted = quoteParam(value);
        } catch (error) {
          tally.hit('refused');
          expect(error).toBeInstanceOf(TypeError);
          expect(value).toMatch(UNQUOTABLE);
          return;
        }
        tally.hit('quoted');
        expect(value).not.toMatch(UNQUOTABLE);
        expect(quoted).not.toMatch(CONTROL_OUT);
        expect(quoted.startsWith('"') && quoted.endsWith('"')).toBe(true);
        expect(unquote(quoted)).toBe(value);
      }),
      RUNS,
    );
    // half the values hold something unquotable (a CR or LF in most): both outcomes are common
    tally.expectShares({ refused: 0.35, quoted: 0.35 });
  });
});

describe('challenge (property)', () => {
  it('building then parsing a challenge gives back its scheme and parameters', () => {
    const tally = caseTally();
    fc.assert(
      fc.property(token, paramList, (scheme, list) => {
        tally.case();
        const params = Object.fromEntries(list);
        tally.hit('checked');
        // the order challenge() writes them in: the object's own order (integer-like keys first)
        expect(parseChallenge(challenge(scheme, params))).toEqual({
          scheme,
          params: Object.entries(params),
        });
      }),
      RUNS,
    );
    tally.expectShares({ checked: 1 });
  });

  it('leaves out undefined parameters', () => {
    const tally = caseTally();
    fc.assert(
      fc.property(token, paramList, fc.array(fc.boolean()), (scheme, list, keep) => {
        tally.case();
        const params = Object.fromEntries(
          list.map(([n, v], i) => [n, keep[i] === false ? undefined : v]),
        );
        const expected = Object.entries(params).filter(([, v]) => v !== undefined);
        if (expected.length < list.length) tally.hit('some left out');
        expect(parseChallenge(challenge(scheme, params)).params).toEqual(expected);
      }),
      RUNS,
    );
    // measured ~55%: a fifth of the lists are empty, keep[] is often shorter than the list
    tally.expectShares({ 'some left out': 0.25 });
  });

  it('never puts CR or LF in its output for any parameter value (token scheme and names)', () => {
    // 1–4 parameters, a quarter of the values unquotable (undefined ones are left out): about
    // half the challenges are refused and half built
    const value = fc.oneof(
      { weight: 5, arbitrary: latin1(30) },
      { weight: 1, arbitrary: fc.constant(undefined) },
      { weight: 2, arbitrary: paramValue.filter((v) => UNQUOTABLE.test(v)) },
    );
    const tally = caseTally();
    fc.assert(
      fc.property(
        token,
        fc.dictionary(token, value, { minKeys: 1, maxKeys: 4 }),
        (scheme, params) => {
          tally.case();
          const unquotable = Object.values(params).some(
            (v) => v !== undefined && UNQUOTABLE.test(v),
          );
          let text: string;
          try {
            text = challenge(scheme, params);
          } catch (error) {
            tally.hit('refused');
            expect(error).toBeInstanceOf(TypeError);
            expect(unquotable).toBe(true);
            return;
          }
          tally.hit('built');
          expect(text).not.toMatch(/[\r\n]/);
          expect(text).not.toMatch(CONTROL_OUT);
          expect(unquotable).toBe(false);
          expect(parseChallenge(text)).toEqual({
            scheme,
            params: Object.entries(params).filter(([, v]) => v !== undefined),
          });
        },
      ),
      RUNS,
    );
    tally.expectShares({ refused: 0.3, built: 0.3 });
  });

  it('builds a header value node accepts for every Latin-1 parameter value', () => {
    const tally = caseTally();
    fc.assert(
      fc.property(token, paramList, (scheme, list) => {
        tally.case();
        tally.hit('checked');
        expect(() =>
          validateHeaderValue('WWW-Authenticate', challenge(scheme, Object.fromEntries(list))),
        ).not.toThrow();
      }),
      RUNS,
    );
    tally.expectShares({ checked: 1 });
  });

  // Found by the property above over all of Unicode: quoteParam() used to refuse only C0
  // controls and DEL, so a realm 'Ā' (U+0100) passed and made every 401 unsendable.
  it('refuses, or builds a sendable header from, a parameter value above U+00FF', () => {
    expect(() => challenge('Basic', { realm: 'Ā' })).toThrow(TypeError);
    const latin1 = challenge('Basic', { realm: 'café' }); // é is U+00E9: sendable
    expect(() => validateHeaderValue('WWW-Authenticate', latin1)).not.toThrow();
  });

  // The same, end to end: such a realm is now refused when basicAuth() is configured, so no
  // 401 can lose its WWW-Authenticate (RFC 9110 §15.5.2 requires it).
  it('a realm basicAuth accepts never costs its 401 the WWW-Authenticate header', async () => {
    expect(() => basicAuth({ realm: 'Ā', verify: () => undefined })).toThrow(TypeError);
    const mw = authenticate([basicAuth({ realm: 'café', verify: () => undefined })]);
    const req = fakeRequest();
    const { res } = fakeResponse(req);
    const error = await Promise.resolve(mw(req, res, async () => {})).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(() => sendError(req, res, error, { logger: silentLogger })).not.toThrow();
    expect(res.statusCode).toBe(401);
    expect(res.getHeader('WWW-Authenticate')).toBeDefined();
  });

  // Found by the CR/LF property over all strings: challenge() used to check parameter values
  // only (challenge('\n') === '\n'); the scheme and the names must now be tokens.
  it('never puts CR or LF in its output, whatever the scheme and parameter names', () => {
    for (const [scheme, params] of [
      ['\n', {}],
      ['B', { '\n': '' }],
    ] as const) {
      let text: string | undefined;
      try {
        text = challenge(scheme, params);
      } catch {
        text = undefined;
      }
      expect(text ?? '').not.toMatch(/[\r\n]/);
    }
  });
});
