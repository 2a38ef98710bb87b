// Property tests of WebSocket close reason truncation.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  CloseCode,
  MAX_CLOSE_REASON_BYTES,
  truncateCloseReason,
  WebSocketCloseError,
} from '../../src/ws/close-codes.js';
import { caseTally } from '../helpers/arbitraries.js';

const RUNS = { numRuns: 1000 };

/** The string with each lone surrogate replaced by U+FFFD, as UTF-8 encoding would. */
function wellFormed(s: string): string {
  let out = '';
  for (const ch of s) {
    const unit = ch.charCodeAt(0);
    out += ch.length === 1 && unit >= 0xd800 && unit <= 0xdfff ? '\uFFFD' : ch;
  }
  return out;
}

/**
 * Texts of 1-, 2-, 3- and 4-byte characters and lone surrogates, about half of them over the
 * 123 bytes (so that the cut is tested) and half within.
 */
const reason = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.string({ unit: 'grapheme', maxLength: 130 }),
  fc.string({
    unit: fc.constantFrom('a', 'é', '€', '😀', '\uD800', '\uDC00', 'e\u0301'),
    minLength: 30,
    maxLength: 140,
  }),
  // around the limit: 110–123 ASCII bytes, then multi-byte characters where the cut falls
  {
    weight: 2,
    arbitrary: fc
      .tuple(
        fc.string({ unit: 'grapheme-ascii', minLength: 110, maxLength: 123 }),
        fc.string({
          unit: fc.constantFrom('a', 'é', '€', '😀', '\uD800', 'e\u0301'),
          minLength: 1,
          maxLength: 12,
        }),
      )
      .map(([ascii, tail]) => ascii + tail),
  },
);

describe('truncateCloseReason (property)', () => {
  it('is at most 123 bytes of valid UTF-8, a prefix of the input, and as long as it can be', () => {
    const tally = caseTally();
    fc.assert(
      fc.property(reason, (input) => {
        tally.case();
        const out = truncateCloseReason(input);
        const bytes = Buffer.from(out, 'utf8');
        tally.hit('checked');
        expect(bytes.length).toBeLessThanOrEqual(MAX_CLOSE_REASON_BYTES);
        // valid UTF-8 with no lone surrogate: decoding its bytes strictly gives it back
        expect(new TextDecoder('utf-8', { fatal: true }).decode(bytes)).toBe(out);
        const whole = wellFormed(input);
        expect(whole.startsWith(out)).toBe(true);
        if (input === whole) expect(input.startsWith(out)).toBe(true);
        if (out !== whole) {
          tally.hit('cut');
          // cut only where the next code point would not fit
          const next = String.fromCodePoint(whole.codePointAt(out.length)!);
          expect(bytes.length + Buffer.byteLength(next, 'utf8')).toBeGreaterThan(
            MAX_CLOSE_REASON_BYTES,
          );
        }
      }),
      RUNS,
    );
    // measured ~40% cut: the maximality check runs on those
    tally.expectShares({ checked: 1, cut: 0.3 });
  });

  it('never splits a surrogate pair, and is idempotent', () => {
    const tally = caseTally();
    fc.assert(
      fc.property(reason, (input) => {
        tally.case();
        const out = truncateCloseReason(input);
        tally.hit('checked');
        const last = out.charCodeAt(out.length - 1);
        expect(last >= 0xd800 && last <= 0xdbff).toBe(false);
        expect(truncateCloseReason(out)).toBe(out);
      }),
      RUNS,
    );
    tally.expectShares({ checked: 1 });
  });

  it('keeps a reason that already fits as it is', () => {
    const fits = fc
      .oneof(
        fc.string({ unit: 'grapheme', maxLength: 40 }),
        fc.string({ unit: 'grapheme-ascii', minLength: 100, maxLength: 123 }),
      )
      // a filter, not fc.pre: no case is skipped
      .filter((s) => Buffer.byteLength(s, 'utf8') <= MAX_CLOSE_REASON_BYTES);
    const tally = caseTally();
    fc.assert(
      fc.property(fits, (input) => {
        tally.case();
        tally.hit('checked');
        expect(truncateCloseReason(input)).toBe(input);
      }),
      RUNS,
    );
    tally.expectShares({ checked: 1 });
  });

  it('WebSocketCloseError carries the truncated reason', () => {
    const tally = caseTally();
    fc.assert(
      fc.property(reason, (input) => {
        tally.case();
        const error = new WebSocketCloseError(CloseCode.POLICY_VIOLATION, input);
        tally.hit('checked');
        expect(error.reason).toBe(truncateCloseReason(input));
      }),
      { numRuns: 200 },
    );
    tally.expectShares({ checked: 1 });
  });
});
