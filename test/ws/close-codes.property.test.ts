// Property tests of WebSocket close reason truncation.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  CloseCode,
  MAX_CLOSE_REASON_BYTES,
  truncateCloseReason,
  WebSocketCloseError,
} from '../../src/ws/close-codes.js';

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

/** Long texts of 1-, 2-, 3- and 4-byte characters and lone surrogates. */
const reason = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.string({ unit: 'grapheme', maxLength: 130 }),
  fc.string({
    unit: fc.constantFrom('a', 'é', '€', '😀', '\uD800', '\uDC00', 'e\u0301'),
    minLength: 30,
    maxLength: 140,
  }),
);

describe('truncateCloseReason (property)', () => {
  it('is at most 123 bytes of valid UTF-8, a prefix of the input, and as long as it can be', () => {
    fc.assert(
      fc.property(reason, (input) => {
        const out = truncateCloseReason(input);
        const bytes = Buffer.from(out, 'utf8');
        expect(bytes.length).toBeLessThanOrEqual(MAX_CLOSE_REASON_BYTES);
        // valid UTF-8 with no lone surrogate: decoding its bytes strictly gives it back
        expect(new TextDecoder('utf-8', { fatal: true }).decode(bytes)).toBe(out);
        const whole = wellFormed(input);
        expect(whole.startsWith(out)).toBe(true);
        if (input === whole) expect(input.startsWith(out)).toBe(true);
        if (out !== whole) {
          // cut only where the next code point would not fit
          const next = String.fromCodePoint(whole.codePointAt(out.length)!);
          expect(bytes.length + Buffer.byteLength(next, 'utf8')).toBeGreaterThan(
            MAX_CLOSE_REASON_BYTES,
          );
        }
      }),
      RUNS,
    );
  });

  it('never splits a surrogate pair, and is idempotent', () => {
    fc.assert(
      fc.property(reason, (input) => {
        const out = truncateCloseReason(input);
        const last = out.charCodeAt(out.length - 1);
        expect(last >= 0xd800 && last <= 0xdbff).toBe(false);
        expect(truncateCloseReason(out)).toBe(out);
      }),
      RUNS,
    );
  });

  it('keeps a reason that already fits as it is', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 40 }), (input) => {
        fc.pre(Buffer.byteLength(input, 'utf8') <= MAX_CLOSE_REASON_BYTES);
        expect(truncateCloseReason(input)).toBe(input);
      }),
      RUNS,
    );
  });

  it('WebSocketCloseError carries the truncated reason', () => {
    fc.assert(
      fc.property(reason, (input) => {
        const error = new WebSocketCloseError(CloseCode.POLICY_VIOLATION, input);
        expect(error.reason).toBe(truncateCloseReason(input));
      }),
      { numRuns: 200 },
    );
  });
});
