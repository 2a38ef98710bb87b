import { isToken } from '../../internal/grammar.js';

/**
 * One satisfiable byte range of a representation: `start` and `end` are zero-based and both
 * inclusive, as in `Content-Range: bytes 0-499/1234`.
 *
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-14.1.2 | RFC 9110 §14.1.2}
 */
export interface ByteRange {
  /** First byte, from 0. */
  start: number;
  /** Last byte, inclusive, below the representation's size. */
  end: number;
}

/**
 * Why a `Range` field was ignored (the answer is then the whole representation, 200):
 * `malformed` (not the grammar of §14.1.1, or `a-b` with `b < a`), `unit` (a unit other than
 * `bytes`), `too-many` (more range-specs than `maxRanges`), `out-of-order` (more descending
 * parts than `maxOutOfOrder`), `empty` (a suffix range on an empty representation).
 */
export type RangeIgnoredReason = 'malformed' | 'unit' | 'too-many' | 'out-of-order' | 'empty';

/**
 * What {@link parseRange} made of a `Range` field: `none` (no field), `ignored` (answer 200
 * with the whole representation), `unsatisfiable` (answer 416 with `Content-Range: bytes
 * *\/size`), or the `ranges` to send (206), coalesced, in the order they were asked for.
 *
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-14.2 | RFC 9110 §14.2}
 */
export type RangeVerdict =
  | { type: 'none' }
  | { type: 'ignored'; reason: RangeIgnoredReason }
  | { type: 'unsatisfiable' }
  | { type: 'ranges'; ranges: ByteRange[] };

/**
 * Options of {@link parseRange}: the limits that keep a `Range` field from being used as a
 * denial of service (RFC 9110 §14.2, §17.15).
 *
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-17.15 | RFC 9110 §17.15}
 */
export interface ParseRangeOptions {
  /**
   * Most range-specs (empty list elements included) a field may list; a field with more is
   * ignored, and the whole representation sent with a 200.
   * @defaultValue `50`
   */
  maxRanges?: number;
  /**
   * Most parts, once coalesced, that may start before the part listed before them; more
   * ("many small ranges not in ascending order", §14.2) and the field is ignored (200).
   * @defaultValue `2`
   */
  maxOutOfOrder?: number;
}

const NONE: RangeVerdict = { type: 'none' };
const SPEC = /^(\d*)-(\d*)$/;

/** A run of digits as a number; beyond `Number.MAX_SAFE_INTEGER`, `Infinity` (never a throw). */
function position(digits: string): number {
  const value = Number(digits);
  return Number.isSafeInteger(value) ? value : Number.POSITIVE_INFINITY;
}

/** Whether `value` is a whole number of at least `min`, for the limit options. */
function limit(value: number | undefined, fallback: number, min: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < min) {
    throw new TypeError(`range limits must be integers of at least ${min}`);
  }
  return value;
}

/** The range-set's elements, or `undefined` when there are more than `max` of them. */
function elements(set: string, max: number): string[] | undefined {
  const found: string[] = [];
  let from = 0;
  while (from <= set.length) {
    if (found.length === max) return undefined;
    const comma = set.indexOf(',', from);
    const to = comma === -1 ? set.length : comma;
    found.push(set.slice(from, to).replace(/^[ \t]+|[ \t]+$/g, ''));
    from = to + 1;
  }
  return found;
}

/** Merges overlapping and adjacent ranges; the parts keep the order of their first request. */
function coalesce(ranges: readonly ByteRange[]): ByteRange[] {
  const byStart = ranges
    .map((range, index) => ({ ...range, index }))
    .sort((a, b) => a.start - b.start || a.end - b.end);
  const merged: { start: number; end: number; index: number }[] = [];
  for (const range of byStart) {
    const last = merged[merged.length - 1];
    if (last !== undefined && range.start <= last.end + 1) {
      last.end = Math.max(last.end, range.end);
      last.index = Math.min(last.index, range.index);
    } else merged.push(range);
  }
  return merged.sort((a, b) => a.index - b.index).map(({ start, end }) => ({ start, end }));
}

function descents(ranges: readonly ByteRange[]): number {
  let count = 0;
  for (let i = 1; i < ranges.length; i++) if (ranges[i]!.start < ranges[i - 1]!.start) count++;
  return count;
}

/** The satisfiable ranges of the specs, `'malformed'`, or `'empty'` (suffixes on 0 bytes). */
function resolve(specs: readonly string[], size: number): ByteRange[] | 'malformed' | 'empty' {
  const ranges: ByteRange[] = [];
  let emptySuffix = false;
  for (const spec of specs) {
    if (spec === '') continue; // empty list elements are allowed (RFC 9110 §5.6.1)
    const m = SPEC.exec(spec);
    if (m === null || (m[1] === '' && m[2] === '')) return 'malformed';
    if (m[1] === '') {
      const length = position(m[2]!);
      if (length > 0 && size === 0) emptySuffix = true;
      if (length > 0 && size > 0) ranges.push({ start: Math.max(0, size - length), end: size - 1 });
      continue;
    }
    const start = position(m[1]!);
    const end = m[2] === '' ? Number.POSITIVE_INFINITY : position(m[2]!);
    if (end < start) return 'malformed';
    if (start < size) ranges.push({ start, end: Math.min(end, size - 1) });
  }
  if (specs.every((spec) => spec === '')) return 'malformed'; // 1#range-spec: one at least
  return ranges.length === 0 && emptySuffix ? 'empty' : ranges;
}

/**
 * Parses a `Range` field against a representation of `size` bytes (RFC 9110 §14.1–14.2).
 * Only the `bytes` unit is known (case-insensitive); another unit, or a field that is not
 * `bytes=` followed by `first-last`, `first-` and `-suffix` specs separated by commas (with
 * optional whitespace around the commas only), is ignored. Numbers beyond
 * `Number.MAX_SAFE_INTEGER` count as infinite: such a first byte is unsatisfiable, such a
 * last byte or suffix takes the rest. Overlapping and adjacent ranges are coalesced; too many
 * specs, or too many parts out of ascending order, and the field is ignored. Never throws on
 * input.
 *
 * @example
 * ```ts
 * parseRange('bytes=0-99,-100', 1000); // { type: 'ranges', ranges: [{ start: 0, end: 99 }, { start: 900, end: 999 }] }
 * parseRange('bytes=2000-', 1000); // { type: 'unsatisfiable' }
 * parseRange('items=0-1', 1000); // { type: 'ignored', reason: 'unit' }
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-14.2 | RFC 9110 §14.2}
 */
export function parseRange(
  header: string | undefined,
  size: number,
  options: ParseRangeOptions = {},
): RangeVerdict {
  const maxRanges = limit(options.maxRanges, 50, 1);
  const maxOutOfOrder = limit(options.maxOutOfOrder, 2, 0);
  if (header === undefined) return NONE;
  const field = header.trim();
  const eq = field.indexOf('=');
  const unit = field.slice(0, Math.max(eq, 0));
  if (eq === -1 || !isToken(unit)) return { type: 'ignored', reason: 'malformed' };
  if (unit.toLowerCase() !== 'bytes') return { type: 'ignored', reason: 'unit' };
  const set = field.slice(eq + 1);
  if (/^[ \t]/.test(set)) return { type: 'ignored', reason: 'malformed' };
  const specs = elements(set, maxRanges);
  if (specs === undefined) return { type: 'ignored', reason: 'too-many' };
  const ranges = resolve(specs, size);
  if (ranges === 'malformed' || ranges === 'empty') return { type: 'ignored', reason: ranges };
  if (ranges.length === 0) return { type: 'unsatisfiable' };
  const parts = coalesce(ranges);
  if (descents(parts) > maxOutOfOrder) return { type: 'ignored', reason: 'out-of-order' };
  return { type: 'ranges', ranges: parts };
}

/**
 * The `Content-Range` of one part (`bytes 0-499/1234`), or of a 416 when `range` is omitted
 * (`bytes *\/1234`).
 *
 * @example
 * ```ts
 * formatContentRange(1234, { start: 0, end: 499 }); // 'bytes 0-499/1234'
 * formatContentRange(1234); // 'bytes *\/1234'
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-14.4 | RFC 9110 §14.4}
 */
export function formatContentRange(size: number, range?: ByteRange): string {
  return range === undefined ? `bytes */${size}` : `bytes ${range.start}-${range.end}/${size}`;
}
