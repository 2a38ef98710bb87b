// Property tests of device-flow user codes: generation, display form and normalisation.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  formatUserCode,
  generateUserCode,
  normalizeUserCode,
  USER_CODE_ALPHABET,
} from '../../../src/oauth/endpoints/device-authorization.js';
import { caseTally } from '../../helpers/arbitraries.js';

const RUNS = { numRuns: 1000 };
const SHAPE = /^[BCDFGHJKLMNPQRSTVWXZ]{8}$/;

/** Any code the generator can make: 8 characters of the alphabet. */
const code = fc.string({
  unit: fc.constantFrom(...USER_CODE_ALPHABET),
  minLength: 8,
  maxLength: 8,
});

/**
 * The code as a person might type it: any case, dashes and white space anywhere. At most 35
 * characters (9 gaps of at most 3), within the 64 that normalizeUserCode() looks at.
 */
const typed = (c: string) =>
  fc
    .tuple(
      fc.array(fc.boolean(), { minLength: c.length, maxLength: c.length }),
      fc.array(fc.constantFrom('', '', '-', ' ', '  ', '\t', '--', ' - ', '\u00a0', '\u3000'), {
        minLength: c.length + 1,
        maxLength: c.length + 1,
      }),
    )
    .map(([lower, gaps]) => {
      let out = gaps[0]!;
      for (let i = 0; i < c.length; i++) {
        out += (lower[i] ? c[i]!.toLowerCase() : c[i]!) + gaps[i + 1]!;
      }
      return out;
    });

describe('user codes (property)', () => {
  it('normalize(format(code)) === code', () => {
    const tally = caseTally();
    fc.assert(
      fc.property(code, (c) => {
        tally.case();
        tally.hit('checked');
        expect(formatUserCode(c)).toMatch(/^[A-Z]{4}-[A-Z]{4}$/);
        expect(normalizeUserCode(formatUserCode(c))).toBe(c);
      }),
      RUNS,
    );
    tally.expectShares({ checked: 1 });
  });

  it('generated codes have the shape and survive format/normalize', () => {
    for (let i = 0; i < 500; i++) {
      const c = generateUserCode();
      expect(c).toMatch(SHAPE);
      expect(normalizeUserCode(formatUserCode(c))).toBe(c);
    }
  });

  it('lower-case, dash and white-space variants map to the same code', () => {
    const tally = caseTally();
    fc.assert(
      fc.property(
        code.chain((c) => fc.tuple(fc.constant(c), typed(c))),
        ([c, variant]) => {
          tally.case();
          tally.hit('checked');
          expect(normalizeUserCode(variant)).toBe(c);
        },
      ),
      RUNS,
    );
    tally.expectShares({ checked: 1 });
  });

  it('on any input: never throws, answers undefined or a code, and is idempotent', () => {
    // mostly what normalises to a code (typed variants, near misses), so that the checks of a
    // code run; any string and the near misses give the undefined answers
    const input = fc.oneof(
      { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 70 }) },
      { weight: 5, arbitrary: code.chain(typed) },
      {
        weight: 2,
        arbitrary: fc.string({
          unit: fc.constantFrom(...`${USER_CODE_ALPHABET}aeiou-  `),
          maxLength: 12,
        }),
      },
    );
    const tally = caseTally();
    fc.assert(
      fc.property(input, (s) => {
        tally.case();
        const n = normalizeUserCode(s);
        if (n === undefined) {
          tally.hit('undefined');
          return;
        }
        tally.hit('code');
        expect(n).toMatch(SHAPE);
        expect(normalizeUserCode(n)).toBe(n);
        expect(normalizeUserCode(formatUserCode(n))).toBe(n);
      }),
      RUNS,
    );
    // measured 60–65% codes, the rest undefined
    tally.expectShares({ code: 0.5, undefined: 0.2 });
  });

  it('refuses codes with a vowel, a digit or the wrong length', () => {
    const tally = caseTally();
    fc.assert(
      fc.property(
        code,
        fc.nat({ max: 7 }),
        fc.constantFrom('A', 'E', 'I', 'O', 'U', 'Y', '0', '1', '5'),
        (c, at, bad) => {
          tally.case();
          tally.hit('checked');
          expect(normalizeUserCode(c.slice(0, at) + bad + c.slice(at + 1))).toBeUndefined();
          expect(normalizeUserCode(c.slice(0, 7))).toBeUndefined();
          expect(normalizeUserCode(`${c}B`)).toBeUndefined();
        },
      ),
      RUNS,
    );
    tally.expectShares({ checked: 1 });
  });
});
