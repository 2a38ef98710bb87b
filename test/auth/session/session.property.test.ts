// Property tests of the session cookie: Set-Cookie → Cookie round trips, and any Cookie header.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createSessions } from '../../../src/auth/session/session.js';
import { HttpError } from '../../../src/core/errors/errors.js';
import { caseTally } from '../../helpers/arbitraries.js';
import { fakeRequest, fakeResponse } from '../../helpers/fake-http.js';

const RUNS = { numRuns: 300 };
const allowedOrigins = ['https://app.example.test'];

/** cookie-name = token (RFC 6265 §4.1.1), less the `__Host-`/`__Secure-` prefixes. */
const TCHAR = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
const cookieName = fc
  .string({ unit: fc.constantFrom(...TCHAR), minLength: 1, maxLength: 16 })
  .filter((n) => !/^__(host|secure)-/i.test(n));
/** cookie-octet (RFC 6265 §4.1.1): no CTLs, whitespace, DQUOTE, comma, semicolon or backslash. */
const cookieValue = fc.string({
  unit: fc
    .integer({ min: 0x21, max: 0x7e })
    .filter((c) => c !== 0x22 && c !== 0x2c && c !== 0x3b && c !== 0x5c)
    .map((c) => String.fromCharCode(c)),
  maxLength: 20,
});

/** The `name=value` a browser sends back for a Set-Cookie line. */
const pairOf = (setCookie: string) => setCookie.slice(0, setCookie.indexOf(';'));

function setCookieLines(res: ReturnType<typeof fakeResponse>['res']): string[] {
  const value = res.getHeader('Set-Cookie');
  return value === undefined ? [] : Array.isArray(value) ? value : [String(value)];
}

describe('session cookie (property)', () => {
  it('signIn sets a cookie that, sent back among any other cookies, finds the session', async () => {
    const tally = caseTally();
    await fc.assert(
      fc.asyncProperty(
        cookieName,
        fc.array(fc.tuple(cookieName, cookieValue), { maxLength: 4 }),
        fc.array(fc.tuple(cookieName, cookieValue), { maxLength: 4 }),
        fc.constantFrom('; ', ';', ' ;  '),
        fc.string({ minLength: 1, maxLength: 12 }),
        async (name, before, after, separator, sub) => {
          tally.case();
          const sessions = createSessions({ allowedOrigins, cookieName: name });
          const signInReq = fakeRequest({ method: 'POST' });
          const { res } = fakeResponse(signInReq);
          await sessions.signIn(signInReq, res, { sub, scopes: ['read'] });
          const lines = setCookieLines(res);
          expect(lines).toHaveLength(1);
          const pair = pairOf(lines[0]!);
          expect(pair.startsWith(`${name}=`)).toBe(true);
          const others = (list: [string, string][]) =>
            list.filter(([n]) => n !== name).map(([n, v]) => `${n}=${v}`);
          const header = [...others(before), pair, ...others(after)].join(separator);
          const req = fakeRequest({ headers: [['Cookie', header]] });
          tally.hit('checked');
          expect(await sessions.read(req)).toMatchObject({ sub, scopes: ['read'] });
          expect(await sessions.authenticator.authenticate(req)).toMatchObject({
            sub,
            method: 'session',
          });
        },
      ),
      RUNS,
    );
    tally.expectShares({ checked: 1 });
  });

  it('the cookie value is a 43-character base64url id, and signOut clears it', async () => {
    const tally = caseTally();
    await fc.assert(
      fc.asyncProperty(cookieName, async (name) => {
        tally.case();
        const sessions = createSessions({ allowedOrigins, cookieName: name });
        const req = fakeRequest({ method: 'POST' });
        const { res } = fakeResponse(req);
        await sessions.signIn(req, res, { sub: 'u', scopes: [] });
        const pair = pairOf(setCookieLines(res)[0]!);
        tally.hit('checked');
        expect(pair.slice(name.length + 1)).toMatch(/^[A-Za-z0-9_-]{43}$/);
        const outReq = fakeRequest({ method: 'POST', headers: [['Cookie', pair]] });
        const out = fakeResponse(outReq);
        await sessions.signOut(outReq, out.res);
        const cleared = setCookieLines(out.res);
        expect(cleared.some((l) => l.startsWith(`${name}=;`) && /Max-Age=0/i.test(l))).toBe(true);
        const again = fakeRequest({ headers: [['Cookie', pair]] });
        expect(await sessions.read(again)).toBeUndefined();
      }),
      { numRuns: 100 },
    );
    tally.expectShares({ checked: 1 });
  });

  it('any Cookie header: read() resolves, authenticate passes or throws a 401 clearing the cookie', async () => {
    const sessions = createSessions({ allowedOrigins, cookieName: 'sid' });
    const header = fc.oneof(
      // no sid cookie (almost always): passes
      { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 80 }) },
      fc.string({ unit: 'binary', maxLength: 40 }).map((s) => `sid=${s}`),
      fc
        .string({
          unit: fc.constantFrom('a', 'B', '-', '_', '%', '"', '=', ';', ' '),
          maxLength: 60,
        })
        .map((s) => `sid=${s}`),
      fc
        .uint8Array({ minLength: 32, maxLength: 32 })
        .map((b) => `x=1; sid=${Buffer.from(b).toString('base64url')}`),
    );
    const tally = caseTally();
    await fc.assert(
      fc.asyncProperty(fc.array(header, { minLength: 1, maxLength: 2 }), async (values) => {
        tally.case();
        const headers = values.map((v) => ['Cookie', v] as const);
        expect(await sessions.read(fakeRequest({ headers }))).toBeUndefined();
        const outcome = await Promise.resolve(
          sessions.authenticator.authenticate(fakeRequest({ headers })),
        ).then(
          (value) => ({ ok: true as const, value }),
          (error: unknown) => ({ ok: false as const, error }),
        );
        if (outcome.ok) {
          tally.hit('passed');
          expect(outcome.value).toBeUndefined();
          return;
        }
        tally.hit('refused');
        expect(outcome.error).toBeInstanceOf(HttpError);
        const error = outcome.error as HttpError;
        expect(error.status).toBe(401);
        expect(String(error.headers['Set-Cookie'])).toMatch(/^sid=;.*Max-Age=0/i);
      }),
      { numRuns: 500 },
    );
    // measured: ~70% refused (a sid cookie, unknown), ~30% passed (no sid cookie at all)
    tally.expectShares({ passed: 0.15, refused: 0.5 });
  });
});
