import { randomBytes } from 'node:crypto';

/** Levenshtein distance, for typo hints in option errors. */
function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = tmp;
    }
  }
  return row[b.length]!;
}

/**
 * Throws a `TypeError` naming the first unknown option, with a hint when a known one is
 * close ("Did you mean `maxAge`?"). Called once, when a factory builds its middleware.
 */
export function assertKnownOptions(
  owner: string,
  options: object | undefined,
  known: readonly string[],
): void {
  if (options === undefined || options === null) return;
  if (typeof options !== 'object') throw new TypeError(`${owner}: options must be an object`);
  for (const key of Object.keys(options)) {
    if (known.includes(key)) continue;
    let best: string | undefined;
    let bestDistance = Number.POSITIVE_INFINITY;
    for (const candidate of known) {
      const d = distance(key.toLowerCase(), candidate.toLowerCase());
      if (d < bestDistance) {
        best = candidate;
        bestDistance = d;
      }
    }
    const hint = best !== undefined && bestDistance <= 3 ? ` Did you mean \`${best}\`?` : '';
    const error = new TypeError(`${owner}: unknown option \`${key}\`.${hint}`);
    (error as TypeError & { code: string }).code = 'ERR_INVALID_OPTION';
    throw error;
  }
}

/** A `TypeError` with a Node-style `code`, for invalid arguments. */
export function invalidOption(message: string): TypeError {
  const error = new TypeError(message);
  (error as TypeError & { code: string }).code = 'ERR_INVALID_OPTION';
  return error;
}

/** Bounds of a number option. */
export interface NumberBounds {
  /** Smallest value allowed. @defaultValue `0` for durations, `1` for counts */
  min?: number;
  /** Largest value allowed. @defaultValue `Number.MAX_SAFE_INTEGER` */
  max?: number;
}

/**
 * A duration option, in whole milliseconds (every duration of portico is one): `fallback`
 * when `undefined`, else an integer within the bounds, else an `ERR_INVALID_OPTION` naming
 * the owner and the option (`createSessions(): \`idleTimeout\` must be …`).
 */
export function durationOption(
  owner: string,
  name: string,
  value: unknown,
  fallback: number,
  bounds: NumberBounds = {},
): number {
  return integerIn(owner, name, value, fallback, bounds.min ?? 0, bounds.max, 'milliseconds');
}

/** A count option (entries, attempts, bytes): a whole number within the bounds (at least 1). */
export function countOption(
  owner: string,
  name: string,
  value: unknown,
  fallback: number,
  bounds: NumberBounds = {},
): number {
  return integerIn(owner, name, value, fallback, bounds.min ?? 1, bounds.max, 'an integer');
}

function integerIn(
  owner: string,
  name: string,
  value: unknown,
  fallback: number,
  min: number,
  max = Number.MAX_SAFE_INTEGER,
  what: string,
): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `at least ${min}` : `${min}–${max}`;
    throw invalidOption(`${owner}: \`${name}\` must be ${what}, ${range}`);
  }
  return value;
}

/** A boolean option: `fallback` when `undefined`. */
export function booleanOption(
  owner: string,
  name: string,
  value: unknown,
  fallback: boolean,
): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw invalidOption(`${owner}: \`${name}\` must be a boolean`);
  return value;
}

/** A function option, or `undefined`. */
export function functionOption<F extends (...args: never[]) => unknown>(
  owner: string,
  name: string,
  value: F | undefined,
): F | undefined {
  if (value !== undefined && typeof value !== 'function') {
    throw invalidOption(`${owner}: \`${name}\` must be a function`);
  }
  return value;
}

/**
 * A secret key option: a string or bytes of 32 or more (the HMAC keys of forms and nonces),
 * or 32 random bytes when it is not given (one process only).
 */
export function secretKeyOption(
  owner: string,
  name: string,
  value: string | Uint8Array | undefined,
): Buffer {
  if (value === undefined) return randomBytes(32);
  const bytes =
    typeof value === 'string'
      ? Buffer.from(value, 'utf8')
      : value instanceof Uint8Array
        ? Buffer.from(value)
        : undefined;
  if (bytes === undefined || bytes.length < 32) {
    throw invalidOption(`${owner}: \`${name}\` must be a string or bytes of 32 or more`);
  }
  return bytes;
}
