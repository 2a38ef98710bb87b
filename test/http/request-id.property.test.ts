// Property tests of request id validation: kept verbatim when sane, replaced otherwise.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { getRequestId } from '../../src/core/context.js';
import { requestId } from '../../src/http/request-id.js';
import { caseTally } from '../helpers/arbitraries.js';
import { fakeRequest, fakeResponse } from '../helpers/fake-http.js';

const RUNS = { numRuns: 1000 };
const GENERATED = 'generated-id';
const SANE = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-';

/** The documented rule, restated: 1–200 of `[A-Za-z0-9._:-]`. */
const isSane = (v: string) =>
  v.length >= 1 && v.length <= 200 && [...v].every((c) => SANE.includes(c));

async function run(
  mw: ReturnType<typeof requestId>,
  lines: readonly (readonly [string, string])[],
  header = 'X-Request-ID',
) {
  const req = fakeRequest({ headers: lines });
  const { res } = fakeResponse(req);
  let called = false;
  await mw(req, res, async () => {
    called = true;
  });
  expect(called).toBe(true);
  const sent = res.getHeader(header);
  expect(sent).toBe(getRequestId(req));
  return String(sent);
}

const value = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: fc.constantFrom(...SANE), minLength: 1, maxLength: 210 }),
  fc.string({ unit: fc.constantFrom(...SANE, ' ', '\r', '\n', '\r\n', ',', '/'), maxLength: 30 }),
);

describe('requestId (property)', () => {
  it('keeps a sane incoming id verbatim and replaces anything else', async () => {
    const mw = requestId({ generate: () => GENERATED });
    const tally = caseTally();
    await fc.assert(
      fc.asyncProperty(value, async (given) => {
        tally.case();
        const id = await run(mw, [['X-Request-ID', given]]);
        tally.hit(isSane(given) ? 'kept' : 'replaced');
        expect(id).toBe(isSane(given) ? given : GENERATED);
        expect(id).not.toMatch(/[\r\n]/);
      }),
      RUNS,
    );
    // measured ~55% sane, ~45% not
    tally.expectShares({ kept: 0.35, replaced: 0.3 });
  });

  it('several incoming lines (joined by node) are replaced unless the result is sane', async () => {
    const mw = requestId({ generate: () => GENERATED });
    const tally = caseTally();
    await fc.assert(
      fc.asyncProperty(fc.array(value, { minLength: 2, maxLength: 3 }), async (values) => {
        tally.case();
        const id = await run(
          mw,
          values.map((v) => ['x-request-id', v] as const),
        );
        tally.hit('checked');
        expect(id).toBe(GENERATED);
      }),
      { numRuns: 300 },
    );
    tally.expectShares({ checked: 1 });
  });

  it('with trustIncoming: false, never keeps the incoming id; the default makes a UUID', async () => {
    const untrusting = requestId({ trustIncoming: false, generate: () => GENERATED });
    const defaults = requestId();
    const tally = caseTally();
    await fc.assert(
      fc.asyncProperty(value, async (given) => {
        tally.case();
        expect(await run(untrusting, [['X-Request-ID', given]])).toBe(GENERATED);
        const id = await run(defaults, [['X-Request-ID', given]]);
        if (isSane(given)) {
          tally.hit('kept');
          expect(id).toBe(given);
        } else {
          tally.hit('replaced');
          expect(id).toMatch(
            /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
          );
        }
      }),
      RUNS,
    );
    tally.expectShares({ kept: 0.35, replaced: 0.3 });
  });

  it('reads and writes a custom header the same way', async () => {
    const TCHAR = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    const tally = caseTally();
    await fc.assert(
      fc.asyncProperty(
        // `__proto__` is a token, but node itself cannot keep a header of that name
        fc
          .string({ unit: fc.constantFrom(...TCHAR), minLength: 1, maxLength: 20 })
          .filter((name) => name.toLowerCase() !== '__proto__'),
        value,
        async (header, given) => {
          tally.case();
          const mw = requestId({ header, generate: () => GENERATED });
          const id = await run(mw, [[header.toUpperCase(), given]], header);
          tally.hit(isSane(given) ? 'kept' : 'replaced');
          expect(id).toBe(isSane(given) ? given : GENERATED);
        },
      ),
      { numRuns: 300 },
    );
    tally.expectShares({ kept: 0.3, replaced: 0.25 });
  });
});
