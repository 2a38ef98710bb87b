// Shared pieces of the property suites: a tally that makes a property fail when its assertions
// were not reached, and the generators several suites build their inputs from.
import fc from 'fast-check';
import { expect } from 'vitest';

/**
 * Counts the cases of one property and, per label, how many of them reached the assertions
 * so labelled. A property with an early `return`, a `catch`, a condition or an `fc.pre` can
 * pass while asserting almost nothing; `expectShares()` after `fc.assert` makes it fail then.
 *
 * ```ts
 * const tally = caseTally();
 * fc.assert(fc.property(arb, (x) => {
 *   tally.case();
 *   const out = f(x);
 *   if (out === undefined) return;
 *   tally.hit('defined');
 *   expect(out)...;
 * }), RUNS);
 * tally.expectShares({ defined: 0.5 });
 * ```
 *
 * `FC_TALLY=1 npx vitest run <file>` prints every tally, to see the shares a generator gives.
 */
export interface CaseTally {
  /** Call first thing in every case (skipped ones included). */
  case(): void;
  /** Call right before the assertions `label` stands for. */
  hit(label: string): void;
  /**
   * Fails unless each label was reached in at least its share (0–1) of the cases, and the
   * property ran at all. A label never hit counts as 0.
   */
  expectShares(shares: Readonly<Record<string, number>>): void;
}

export function caseTally(): CaseTally {
  let cases = 0;
  const hits = new Map<string, number>();
  return {
    case() {
      cases++;
    },
    hit(label) {
      hits.set(label, (hits.get(label) ?? 0) + 1);
    },
    expectShares(shares) {
      const state = expect.getState();
      const name = state.currentTestName ?? 'property';
      if (process.env.FC_TALLY) {
        const parts = [...hits].map(([l, n]) => `${l} ${n}/${cases} (${pct(n, cases)})`);
        console.log(`[tally] ${name}: ${parts.join(', ') || 'no hits'} of ${cases} cases`);
      }
      expect(cases, `${name}: the property ran no case`).toBeGreaterThan(0);
      for (const [label, share] of Object.entries(shares)) {
        const n = hits.get(label) ?? 0;
        expect(
          n,
          `only ${n} of ${cases} cases (${pct(n, cases)}) reached "${label}"; ` +
            `the generator must bring at least ${Math.round(share * 100)}% there`,
        ).toBeGreaterThanOrEqual(Math.ceil(share * cases));
      }
    },
  };
}

const pct = (n: number, of: number) => `${of === 0 ? 0 : Math.round((n / of) * 1000) / 10}%`;

/** tchar (RFC 9110 §5.6.2). */
export const TCHAR =
  "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
/** token (RFC 9110 §5.6.2) of 1 to `maxLength` tchars. */
export const token = (maxLength = 12) =>
  fc.string({ unit: fc.constantFrom(...TCHAR), minLength: 1, maxLength });

/** `word` with each letter in either case. */
export const casing = (word: string) =>
  fc
    .array(fc.boolean(), { minLength: word.length, maxLength: word.length })
    .map((up) => [...word].map((c, i) => (up[i] ? c.toUpperCase() : c.toLowerCase())).join(''));

const charIn = (min: number, max: number) =>
  fc.integer({ min, max }).map((c) => String.fromCharCode(c));

/**
 * What a quoted-string may carry (RFC 9110 §5.6.4): tab, space, visible ASCII and obs-text
 * (0x80–0xFF), rich in the characters that need escaping or end a parameter.
 */
export const latin1Char = fc.oneof(
  { weight: 1, arbitrary: fc.constantFrom('"', '\\', ' ', '\t', ',', '=', ';') },
  { weight: 3, arbitrary: charIn(0x21, 0x7e) },
  { weight: 2, arbitrary: charIn(0x80, 0xff) },
);
export const latin1 = (maxLength = 30) => fc.string({ unit: latin1Char, maxLength });

/** The characters no header value may carry: C0 controls but tab, and DEL. CR and LF lead. */
export const controlChar = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom('\r', '\n', '\r\n') },
  { weight: 1, arbitrary: fc.constantFrom('\0', '\x7f', '\x0b', '\x0c', '\x1b') },
  { weight: 1, arbitrary: charIn(0x00, 0x1f).filter((c) => c !== '\t') },
);

/**
 * `base` with 1 to `maxCount` strings of `insert` put in at random places (ends included),
 * between code points so that no surrogate pair is split.
 */
export function inserting(
  base: fc.Arbitrary<string>,
  insert: fc.Arbitrary<string>,
  maxCount = 3,
): fc.Arbitrary<string> {
  return fc
    .tuple(base, fc.array(fc.tuple(fc.nat(), insert), { minLength: 1, maxLength: maxCount }))
    .map(([text, inserts]) => {
      const points = [...text];
      for (const [at, s] of inserts) points.splice(at % (points.length + 1), 0, s);
      return points.join('');
    });
}
