import { randomBytes } from 'node:crypto';
import { parseDuration } from './duration.js';
import { isPromiseLike } from './promise.js';

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
 * The candidate closest to `value` (Levenshtein, case-insensitive) within `maxDistance`, for a
 * "did you mean" hint; `undefined` when none is that close or `value` is one of them.
 */
export function closestName(
  value: string,
  candidates: readonly string[],
  maxDistance = 3,
): string | undefined {
  if (candidates.includes(value)) return undefined;
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of candidates) {
    const d = distance(value.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return bestDistance <= maxDistance ? best : undefined;
}

/**
 * Option names users arrive with from the libraries of docs/migration.md (helmet, cors,
 * express-rate-limit, @fastify/rate-limit, express-jwt, express-oauth2-jwt-bearer, passport-jwt,
 * @fastify/jwt), where portico's name differs: per owner, then for every owner (`'*'`). Each
 * maps to portico's name (`undefined` when the option lives elsewhere) and where it comes from.
 */
const ALIASES: Readonly<
  Record<string, Readonly<Record<string, readonly [string | undefined, string]>>>
> = {
  'rateLimit()': {
    max: ['limit', "express-rate-limit's and @fastify/rate-limit's `max` is portico's `limit`"],
    timeWindow: ['windowMs', "@fastify/rate-limit's `timeWindow` is portico's `windowMs`"],
    keyGenerator: [
      'key',
      "express-rate-limit's and @fastify/rate-limit's `keyGenerator` is portico's `key`",
    ],
    legacyHeaders: ['headers', "express-rate-limit's `legacyHeaders` is portico's `headers`"],
    passOnStoreError: [
      'failOpen',
      "express-rate-limit's `passOnStoreError` is portico's `failOpen`",
    ],
    skipOnError: ['failOpen', "@fastify/rate-limit's `skipOnError` is portico's `failOpen`"],
    errorResponseBuilder: [
      'handler',
      "@fastify/rate-limit's `errorResponseBuilder` is portico's `handler`",
    ],
    statusCode: [
      'handler',
      "express-rate-limit's `statusCode` and `message` are a `handler` in portico",
    ],
    message: [
      'handler',
      "express-rate-limit's `statusCode` and `message` are a `handler` in portico",
    ],
  },
  'cors()': {
    origin: ['origins', "the cors package's `origin` is portico's `origins`"],
  },
  'securityHeaders()': {
    hsts: ['strictTransportSecurity', "helmet's `hsts` is portico's `strictTransportSecurity`"],
    frameguard: ['xFrameOptions', "helmet's `frameguard` is portico's `xFrameOptions`"],
    noSniff: ['xContentTypeOptions', "helmet's `noSniff` is portico's `xContentTypeOptions`"],
  },
  'jwtBearer()': {
    maxAge: [
      'maxTokenAge',
      "jsonwebtoken's `maxAge` (seconds) is portico's `maxTokenAge` (milliseconds)",
    ],
    issuerBaseURL: ['issuer', "express-oauth2-jwt-bearer's `issuerBaseURL` is portico's `issuer`"],
    tokenSigningAlg: [
      'algorithms',
      "express-oauth2-jwt-bearer's `tokenSigningAlg` is portico's `algorithms`",
    ],
    jwksUri: ['jwksUrl', "jwks-rsa's `jwksUri` is portico's `jwksUrl`"],
    secretOrKey: [
      'secret',
      "passport-jwt's `secretOrKey` is portico's `secret` (HMAC) or `publicKey`",
    ],
    secretOrPublicKey: ['secret', "@fastify/jwt's key is portico's `secret` (HMAC) or `publicKey`"],
    credentialsRequired: [
      undefined,
      "express-jwt's `credentialsRequired: false` is `authenticate([...], { optional: true })` in portico",
    ],
    requestProperty: [
      undefined,
      "express-jwt's `requestProperty`: portico's principal is `requirePrincipal(req)` / `getPrincipal(req)`",
    ],
    getToken: [undefined, 'portico reads the `Authorization: Bearer` header only'],
    isRevoked: [
      undefined,
      'portico has no `isRevoked`: keep tokens short-lived with `maxTokenAge`',
    ],
  },
};

function aliasHint(owner: string, key: string, known: readonly string[]): string | undefined {
  const alias = ALIASES[owner]?.[key];
  if (alias === undefined) return undefined;
  const [name, origin] = alias;
  return name !== undefined && known.includes(name)
    ? ` Did you mean \`${name}\`? (${origin})`
    : ` (${origin})`;
}

/**
 * Throws a `TypeError` naming the first unknown option, with a hint: the name portico uses for
 * an option known from another library (`max` of express-rate-limit is `limit`), else a known
 * option close to it ("Did you mean `maxAge`?"). Called once, when a factory builds its
 * middleware.
 */
export function assertKnownOptions(
  owner: string,
  options: object | undefined,
  known: readonly string[],
): void {
  if (options === undefined || options === null) return;
  if (typeof options !== 'object') throw new TypeError(`${owner}: options must be an object`);
  assertNotThenable(owner, 'options', options);
  for (const key of Object.keys(options)) {
    if (known.includes(key)) {
      assertNotThenable(owner, key, (options as Record<string, unknown>)[key], AWAITED[key]);
      continue;
    }
    let hint = aliasHint(owner, key, known);
    if (hint === undefined) {
      let best: string | undefined;
      let bestDistance = Number.POSITIVE_INFINITY;
      for (const candidate of known) {
        const d = distance(key.toLowerCase(), candidate.toLowerCase());
        if (d < bestDistance) {
          best = candidate;
          bestDistance = d;
        }
      }
      hint = best !== undefined && bestDistance <= 3 ? ` Did you mean \`${best}\`?` : '';
    }
    throw invalidOption(`${owner}: unknown option \`${key}\`.${hint}`);
  }
}

/**
 * The async factories whose value an option of that name takes, to suggest the line a
 * forgotten `await` should read.
 */
const AWAITED: Readonly<Record<string, string>> = {
  keys: 'keys: await createKeySet()',
  clients: 'clients: new MemoryClientStore([await defineClient({ … })])',
  client: 'client: await createClient(…).connect()',
};

/**
 * Throws when an option holds a Promise (a thenable) where its value was meant, the mark of a
 * forgotten `await` on an async factory: "createAuthorizationServer(): `keys` is a Promise: did
 * you forget `await`? (`keys: await createKeySet()`)". `fix` is the line to suggest.
 */
export function assertNotThenable(owner: string, name: string, value: unknown, fix?: string): void {
  if (!isPromiseLike(value)) return;
  const suggestion = fix === undefined ? '' : ` (\`${fix}\`)`;
  throw invalidOption(`${owner}: \`${name}\` is a Promise: did you forget \`await\`?${suggestion}`);
}

/**
 * The options where a value is meant (a secret, a key, a store…), checked at once: present
 * but `undefined` (an unset environment variable), or a Promise (a forgotten `await`).
 */
export function assertGivenOptions(
  owner: string,
  options: object | undefined | null,
  names: readonly string[],
): void {
  if (options === undefined || options === null || typeof options !== 'object') return;
  assertNotExplicitUndefined(owner, options, names);
  for (const name of names) {
    assertNotThenable(owner, name, (options as Record<string, unknown>)[name]);
  }
}

/**
 * Throws when an option is present in the options object but `undefined`, for the options
 * where a value was clearly meant (a secret, a key, a JWKS URL): `{ secret:
 * process.env.JWT_SECRET }` with the variable unset must not fall back to something else.
 */
export function assertNotExplicitUndefined(
  owner: string,
  options: object | undefined | null,
  names: readonly string[],
): void {
  if (options === undefined || options === null || typeof options !== 'object') return;
  for (const name of names) {
    if (name in options && (options as Record<string, unknown>)[name] === undefined) {
      throw invalidOption(
        `${owner}: \`${name}\` is undefined: is its environment variable set? (leave the option out when it is not meant)`,
      );
    }
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

/** Bounds of a duration option. */
export interface DurationBounds extends NumberBounds {
  /**
   * The smallest number of milliseconds taken as written: a smaller positive number looks
   * like seconds and is refused (0 stays allowed when `min` is 0). A string with a unit
   * (`'500ms'`) is not held to it. @defaultValue `1000`
   */
  floor?: number;
}

/** `60000` as `60_000`, the way the error messages suggest a value. */
function grouped(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, '_');
}

/**
 * A duration option, in whole milliseconds (every duration of portico is one): `fallback`
 * when `undefined`; a string with a unit (`'500ms'`, `'5s'`, `'15m'`, `'12h'`) as its
 * milliseconds; a number of milliseconds at least `bounds.floor` (a smaller one looks like
 * seconds: "rateLimit(): `windowMs` is 60 ms, which looks like seconds: did you mean 60_000?");
 * and within the bounds, else an `ERR_INVALID_OPTION` naming the owner and the option.
 */
export function durationOption(
  owner: string,
  name: string,
  value: unknown,
  fallback: number,
  bounds: DurationBounds = {},
): number {
  const min = bounds.min ?? 0;
  if (typeof value === 'string') {
    const ms = parseDuration(value);
    if (ms === undefined) {
      throw invalidOption(
        `${owner}: \`${name}\` must be milliseconds (a number) or a string with a unit ('500ms', '5s', '15m', '12h'), not ${JSON.stringify(value)}`,
      );
    }
    return integerIn(owner, name, ms, fallback, min, bounds.max, 'milliseconds');
  }
  const ms = integerIn(owner, name, value, fallback, min, bounds.max, 'milliseconds');
  const floor = bounds.floor ?? 1000;
  if (value !== undefined && ms > 0 && ms < floor) {
    throw invalidOption(
      `${owner}: \`${name}\` is ${ms} ms, which looks like seconds: did you mean ${grouped(ms * 1000)}? (write '${ms}ms' for ${ms} milliseconds)`,
    );
  }
  return ms;
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
