// The parser of duration strings with a unit (`'500ms'`, `'15m'`): the `Duration` type of
// src/core/duration.ts is parsed here, at the bottom of the imports.

const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const;

const DURATION_STRING = /^(\d+(?:\.\d+)?|\.\d+)\s*(ms|s|m|h)$/;

/**
 * The milliseconds of a duration string with a unit (`'500ms'`, `'1.5s'`, `'15m'`, `'12h'`),
 * rounded to a whole millisecond, or `undefined` when the string is not one.
 *
 * @example
 * ```ts
 * parseDuration('1.5s'); // 1500
 * parseDuration('90'); // undefined: a string needs its unit
 * ```
 */
export function parseDuration(text: string): number | undefined {
  const match = DURATION_STRING.exec(text.trim());
  if (match === null) return undefined;
  const ms = Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
  return Number.isFinite(ms) ? Math.round(ms) : undefined;
}
