// Property tests of HTTP Basic: parseBasicCredentials() and the basicAuth() authenticator.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { basicAuth, parseBasicCredentials } from '../../src/auth/basic.js';
import { HttpError } from '../../src/core/errors.js';
import type { Principal } from '../../src/core/principal.js';
import { fakeRequest } from '../helpers/fake-http.js';

const RUNS = { numRuns: 1000 };

/** What a client sends: `Basic base64(UTF-8(user ":" pass))` (RFC 7617 §2). */
const encode = (user: string, pass: string) =>
  `Basic ${Buffer.from(`${user}:${pass}`, 'utf8').toString('base64')}`;

// biome-ignore lint/suspicious/noControlCharactersInRegex: the characters Basic refuses
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** Well-formed text (no lone surrogates), rich in colons, combining marks and astral characters. */
const unit = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 }) },
  { weight: 1, arbitrary: fc.constantFrom(':', 'é', 'e\u0301', 'Å', 'A\u030a', 'ﬁ', '😀', ' ') },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 1 }) },
);
const text = fc.string({ unit, maxLength: 24 }).filter((s) => !CONTROL.test(s));
const user = text.filter((s) => s !== '' && !s.includes(':'));

const principal: Principal = { sub: 'someone', scopes: [], method: 'basic' };

/** Runs basicAuth over one request, recording what `verify` was given. */
async function run(headers: readonly (readonly [string, string])[]) {
  const seen: [string, string][] = [];
  const auth = basicAuth({
    verify(username, password) {
      seen.push([username, password]);
      return principal;
    },
  });
  const outcome = await Promise.resolve(auth.authenticate(fakeRequest({ headers }))).then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
  return { seen, outcome };
}

describe('parseBasicCredentials (property)', () => {
  it('decodes encode(user, pass) back to (user, pass), NFC-normalised', () => {
    fc.assert(
      fc.property(user, text, (u, p) => {
        expect(parseBasicCredentials(encode(u, p))).toEqual({
          username: u.normalize('NFC'),
          password: p.normalize('NFC'),
        });
      }),
      RUNS,
    );
  });

  it('gives back exactly what was encoded when it is already NFC', () => {
    fc.assert(
      fc.property(
        user.map((s) => s.normalize('NFC')),
        text.map((s) => s.normalize('NFC')),
        (u, p) => {
          expect(parseBasicCredentials(encode(u, p))).toEqual({ username: u, password: p });
        },
      ),
      RUNS,
    );
  });

  it('takes the scheme in any case and any run of spaces after it', () => {
    fc.assert(
      fc.property(
        user,
        text,
        fc.array(fc.boolean(), { minLength: 5, maxLength: 5 }),
        fc.integer({ min: 1, max: 4 }),
        (u, p, upper, spaces) => {
          const scheme = [...'basic'].map((c, i) => (upper[i] ? c.toUpperCase() : c)).join('');
          const header = `${scheme}${' '.repeat(spaces)}${encode(u, p).slice('Basic '.length)}`;
          expect(parseBasicCredentials(header)).toEqual(parseBasicCredentials(encode(u, p)));
        },
      ),
      RUNS,
    );
  });

  it('refuses credentials holding a control character', () => {
    fc.assert(
      fc.property(
        user,
        text,
        fc.integer({ min: 0, max: 0x9f }).filter((c) => c < 0x20 || c >= 0x7f),
        fc.boolean(),
        fc.nat(),
        (u, p, code, inUser, at) => {
          const c = String.fromCharCode(code);
          const target = inUser ? u : p;
          const i = at % (target.length + 1);
          const spliced = target.slice(0, i) + c + target.slice(i);
          const header = inUser ? encode(spliced, p) : encode(u, spliced);
          expect(parseBasicCredentials(header)).toBeUndefined();
        },
      ),
      RUNS,
    );
  });

  it('never throws on any string, and what it returns is well-formed', () => {
    const headers = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 60 }),
      fc.string({ unit: 'binary', maxLength: 60 }).map((s) => `Basic ${s}`),
      fc.uint8Array({ maxLength: 48 }).map((b) => `Basic ${Buffer.from(b).toString('base64')}`),
      fc
        .uint8Array({ maxLength: 48 })
        .map((b) => `basic  ${Buffer.from(b).toString('base64').replace(/=+$/, '')}`),
    );
    fc.assert(
      fc.property(headers, (header) => {
        const parsed = parseBasicCredentials(header);
        if (parsed === undefined) return;
        expect(parsed.username).not.toBe('');
        expect(parsed.username).not.toContain(':');
        expect(CONTROL.test(parsed.username + parsed.password)).toBe(false);
        expect(parsed.username).toBe(parsed.username.normalize('NFC'));
        expect(parsed.password).toBe(parsed.password.normalize('NFC'));
      }),
      RUNS,
    );
  });
});

describe('basicAuth (property)', () => {
  it('hands verify() exactly the decoded (user, pass)', async () => {
    await fc.assert(
      fc.asyncProperty(user, text, async (u, p) => {
        const { seen, outcome } = await run([['Authorization', encode(u, p)]]);
        expect(outcome).toEqual({ ok: true, value: principal });
        expect(seen).toEqual([[u.normalize('NFC'), p.normalize('NFC')]]);
      }),
      RUNS,
    );
  });

  it('on any Authorization lines: passes, authenticates, or throws a 400/401 HttpError', async () => {
    const value = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 40 }),
      fc.string({ unit: 'binary', maxLength: 40 }).map((s) => `Basic ${s}`),
      fc.tuple(user, text).map(([u, p]) => encode(u, p)),
      fc.uint8Array({ maxLength: 40 }).map((b) => `BASIC ${Buffer.from(b).toString('base64')}`),
    );
    const lines = fc.array(
      fc.tuple(fc.constantFrom('Authorization', 'authorization', 'X-Other'), value),
      { maxLength: 3 },
    );
    await fc.assert(
      fc.asyncProperty(lines, async (headers) => {
        const { outcome } = await run(headers);
        if (outcome.ok) return;
        expect(outcome.error).toBeInstanceOf(HttpError);
        const error = outcome.error as HttpError;
        expect([400, 401]).toContain(error.status);
        // a 401 names the way in; nothing sent comes back in the detail
        if (error.status === 401) expect(error.headers['WWW-Authenticate']).toBeDefined();
        for (const [, v] of headers) {
          if (v.length > 8) expect(error.detail).not.toContain(v);
        }
      }),
      RUNS,
    );
  });
});
