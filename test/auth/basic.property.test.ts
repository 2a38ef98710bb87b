// Property tests of HTTP Basic: parseBasicCredentials() and the basicAuth() authenticator.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { basicAuth, parseBasicCredentials } from '../../src/auth/basic.js';
import { HttpError } from '../../src/core/errors/errors.js';
import type { Principal } from '../../src/core/principal.js';
import { caseTally, casing, inserting } from '../helpers/arbitraries.js';
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

/** C0 controls, DEL and C1 controls: what Basic refuses in a user-id or password. */
const control = fc
  .oneof(
    fc.integer({ min: 0x00, max: 0x1f }),
    fc.constant(0x7f),
    fc.integer({ min: 0x80, max: 0x9f }),
  )
  .map((c) => String.fromCharCode(c));

/** A user-id, or a longer one holding a colon: the split is then at that colon. */
const userId = fc.oneof(
  user,
  fc.tuple(user, text).map(([u, rest]) => `${u}:${rest}`),
);

/** The user-id:password text a client encodes: empty parts and colons included. */
const plainText = fc.oneof(
  { weight: 16, arbitrary: fc.tuple(userId, text).map(([u, p]) => `${u}:${p}`) },
  { weight: 3, arbitrary: text.map((p) => `:${p}`) }, // empty user-id
  { weight: 2, arbitrary: text }, // no colon, most of the time
  {
    weight: 2,
    arbitrary: inserting(
      fc.tuple(text, text).map(([u, p]) => `${u}:${p}`),
      control,
    ),
  },
);

/** Any string, rich in the scheme and in base64 of arbitrary bytes. */
const garbage = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 60 }),
  fc.string({ unit: 'binary', maxLength: 60 }).map((s) => `Basic ${s}`),
  fc.uint8Array({ maxLength: 48 }).map((b) => `Basic ${Buffer.from(b).toString('base64')}`),
  fc
    .uint8Array({ maxLength: 48 })
    .map((b) => `basic  ${Buffer.from(b).toString('base64').replace(/=+$/, '')}`),
);

/**
 * Mostly `Basic` credentials as a client sends them (any scheme case, 1–3 spaces), each with
 * the text it encodes; now and then the same with one bit of one byte flipped (`plain` is
 * then the changed text, or undefined when it is no longer UTF-8), or garbage (`plain`
 * undefined: only well-formedness can be checked then).
 */
const basicHeader: fc.Arbitrary<{ header: string; plain: string | undefined }> = fc.oneof(
  {
    weight: 18,
    arbitrary: fc
      .tuple(plainText, casing('basic'), fc.integer({ min: 1, max: 3 }))
      .map(([plain, scheme, spaces]) => ({
        header: `${scheme}${' '.repeat(spaces)}${Buffer.from(plain, 'utf8').toString('base64')}`,
        plain,
      })),
  },
  {
    weight: 1,
    arbitrary: fc.tuple(plainText, fc.nat(), fc.nat({ max: 7 })).map(([plain, at, bit]) => {
      const bytes = Buffer.from(plain, 'utf8');
      if (bytes.length > 0) bytes[at % bytes.length]! ^= 1 << bit;
      // a changed byte may make invalid UTF-8: then undefined, else the changed text
      let changed: string | undefined;
      try {
        changed = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
      } catch {
        changed = undefined;
      }
      return { header: `Basic ${bytes.toString('base64')}`, plain: changed };
    }),
  },
  { weight: 1, arbitrary: garbage.map((header) => ({ header, plain: undefined })) },
);

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
    const tally = caseTally();
    fc.assert(
      fc.property(user, text, (u, p) => {
        tally.case();
        tally.hit('checked');
        expect(parseBasicCredentials(encode(u, p))).toEqual({
          username: u.normalize('NFC'),
          password: p.normalize('NFC'),
        });
      }),
      RUNS,
    );
    tally.expectShares({ checked: 1 });
  });

  it('gives back exactly what was encoded when it is already NFC', () => {
    const tally = caseTally();
    fc.assert(
      fc.property(
        user.map((s) => s.normalize('NFC')),
        text.map((s) => s.normalize('NFC')),
        (u, p) => {
          tally.case();
          tally.hit('checked');
          expect(parseBasicCredentials(encode(u, p))).toEqual({ username: u, password: p });
        },
      ),
      RUNS,
    );
    tally.expectShares({ checked: 1 });
  });

  it('takes the scheme in any case and any run of spaces after it', () => {
    const tally = caseTally();
    fc.assert(
      fc.property(
        user,
        text,
        fc.array(fc.boolean(), { minLength: 5, maxLength: 5 }),
        fc.integer({ min: 1, max: 4 }),
        (u, p, upper, spaces) => {
          const scheme = [...'basic'].map((c, i) => (upper[i] ? c.toUpperCase() : c)).join('');
          const header = `${scheme}${' '.repeat(spaces)}${encode(u, p).slice('Basic '.length)}`;
          tally.case();
          tally.hit('checked');
          // both parse: comparing two undefined would prove nothing
          expect(parseBasicCredentials(header)).toBeDefined();
          expect(parseBasicCredentials(header)).toEqual(parseBasicCredentials(encode(u, p)));
        },
      ),
      RUNS,
    );
    tally.expectShares({ checked: 1 });
  });

  it('refuses credentials holding a control character', () => {
    const tally = caseTally();
    fc.assert(
      fc.property(user, text, control, fc.boolean(), fc.nat(), (u, p, c, inUser, at) => {
        const target = inUser ? u : p;
        const i = at % (target.length + 1);
        const spliced = target.slice(0, i) + c + target.slice(i);
        const header = inUser ? encode(spliced, p) : encode(u, spliced);
        tally.case();
        tally.hit('checked');
        expect(parseBasicCredentials(header)).toBeUndefined();
      }),
      RUNS,
    );
    tally.expectShares({ checked: 1 });
  });

  it('never throws on any string, and answers undefined or two strings', () => {
    const tally = caseTally();
    fc.assert(
      fc.property(garbage, (header) => {
        tally.case();
        const parsed = parseBasicCredentials(header);
        tally.hit('checked');
        if (parsed !== undefined) {
          expect(Object.keys(parsed).sort()).toEqual(['password', 'username']);
          expect(typeof parsed.username).toBe('string');
          expect(typeof parsed.password).toBe('string');
        }
      }),
      RUNS,
    );
    tally.expectShares({ checked: 1 });
  });

  it('what it returns is well-formed, and is the split at the first colon of what was encoded', () => {
    const tally = caseTally();
    fc.assert(
      fc.property(basicHeader, ({ header, plain }) => {
        tally.case();
        const parsed = parseBasicCredentials(header);
        if (plain !== undefined) {
          // the encoded text is known: the answer is fully determined (RFC 7617 §2)
          tally.hit('known');
          const colon = plain.indexOf(':');
          expect(parsed).toEqual(
            colon <= 0 || CONTROL.test(plain)
              ? undefined
              : {
                  username: plain.slice(0, colon).normalize('NFC'),
                  password: plain.slice(colon + 1).normalize('NFC'),
                },
          );
        }
        if (parsed === undefined) return;
        tally.hit('parsed');
        expect(parsed.username).not.toBe('');
        expect(parsed.username).not.toContain(':');
        expect(CONTROL.test(parsed.username + parsed.password)).toBe(false);
        expect(parsed.username).toBe(parsed.username.normalize('NFC'));
        expect(parsed.password).toBe(parsed.password.normalize('NFC'));
      }),
      { numRuns: 2000 },
    );
    // the generator is ~94% encodings of known text, ~66% well-formed credentials (measured);
    // a parser that refused everything, or a generator that stopped making credentials, fails
    tally.expectShares({ known: 0.75, parsed: 0.5 });
  });
});

describe('basicAuth (property)', () => {
  it('hands verify() exactly the decoded (user, pass)', async () => {
    const tally = caseTally();
    await fc.assert(
      fc.asyncProperty(user, text, async (u, p) => {
        tally.case();
        const { seen, outcome } = await run([['Authorization', encode(u, p)]]);
        tally.hit('checked');
        expect(outcome).toEqual({ ok: true, value: principal });
        expect(seen).toEqual([[u.normalize('NFC'), p.normalize('NFC')]]);
      }),
      RUNS,
    );
    tally.expectShares({ checked: 1 });
  });

  it('on any Authorization lines: passes, authenticates, or throws a 400/401 HttpError', async () => {
    const value = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 40 }),
      fc.string({ unit: 'binary', maxLength: 40 }).map((s) => `Basic ${s}`),
      { weight: 3, arbitrary: fc.tuple(user, text).map(([u, p]) => encode(u, p)) },
      fc.uint8Array({ maxLength: 40 }).map((b) => `BASIC ${Buffer.from(b).toString('base64')}`),
    );
    const other = fc.tuple(fc.constant('X-Other'), value);
    const lines = fc.oneof(
      // any lines, repeated Authorization included
      fc.array(fc.tuple(fc.constantFrom('Authorization', 'authorization', 'X-Other'), value), {
        maxLength: 3,
      }),
      // one Authorization line among others: where credentials are authenticated
      fc
        .tuple(
          fc.array(other, { maxLength: 1 }),
          fc.tuple(fc.constantFrom('Authorization', 'authorization'), value),
          fc.array(other, { maxLength: 1 }),
        )
        .map(([before, line, after]) => [...before, line, ...after]),
    );
    const tally = caseTally();
    await fc.assert(
      fc.asyncProperty(lines, async (headers) => {
        tally.case();
        const { seen, outcome } = await run(headers);
        if (outcome.ok) {
          // passed (verify not asked) or authenticated (verify asked once, its answer given)
          tally.hit(outcome.value === undefined ? 'passed' : 'authenticated');
          expect(outcome.value === undefined || outcome.value === principal).toBe(true);
          expect(seen).toHaveLength(outcome.value === undefined ? 0 : 1);
          return;
        }
        tally.hit('refused');
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
    // each outcome is reached often (measured: ~30% passed, ~30% authenticated, ~40% refused)
    tally.expectShares({ passed: 0.15, authenticated: 0.15, refused: 0.25 });
  });
});
