import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import { assertKnownOptions, invalidOption } from '../internal/options.js';

/**
 * scrypt parameters of {@link hashPassword} (RFC 7914 §2). The defaults take about 50–100 ms
 * and 32 MiB per hash on a current server core; raise `cost` as hardware allows (OWASP
 * suggests 17). Accepted: `cost` 10–20, `blockSize` 1–32, `parallelization` 1–16, with
 * N · r · p at most 2^21 (8 times the defaults: 256 MiB, about a second).
 *
 * @see {@link https://www.rfc-editor.org/rfc/rfc7914#section-2 | RFC 7914 §2}
 */
export interface PasswordHashOptions {
  /**
   * log2 of the CPU/memory cost N.
   * @defaultValue `15` (N = 32768)
   */
  cost?: number;
  /**
   * The block size r.
   * @defaultValue `8`
   */
  blockSize?: number;
  /**
   * The parallelization p.
   * @defaultValue `1`
   */
  parallelization?: number;
}

interface Params {
  ln: number;
  r: number;
  p: number;
}

const KNOWN_OPTIONS = [
  'cost',
  'blockSize',
  'parallelization',
] as const satisfies readonly (keyof PasswordHashOptions)[];
const SALT_BYTES = 16;
const KEY_BYTES = 32;
/** N · r · p: 8 times the defaults. Bounds memory (128 · N · r bytes) and CPU alike. */
const MAX_WORK = 2 ** 21;
const FORMAT =
  /^\$scrypt\$ln=([1-9][0-9]?),r=([1-9][0-9]?),p=([1-9][0-9]?)\$([A-Za-z0-9+/]{22,86})\$([A-Za-z0-9+/]{22,86})$/;

/** Whether scrypt with these parameters stays within bounds (no DoS by a crafted hash). */
function withinLimits({ ln, r, p }: Params): boolean {
  if (!Number.isInteger(ln) || !Number.isInteger(r) || !Number.isInteger(p)) return false;
  if (ln < 10 || ln > 20 || r < 1 || r > 32 || p < 1 || p > 16) return false;
  // scrypt itself needs N < 2^(16·r) (RFC 7914 §2): ln 16 or more with r = 1 cannot run
  if (ln >= 16 * r) return false;
  const n = 2 ** ln;
  return n * r * p <= MAX_WORK;
}

function paramsOf(owner: string, options: PasswordHashOptions | undefined): Params {
  assertKnownOptions(owner, options, KNOWN_OPTIONS);
  const params = {
    ln: options?.cost ?? 15,
    r: options?.blockSize ?? 8,
    p: options?.parallelization ?? 1,
  };
  if (!withinLimits(params)) {
    throw invalidOption(
      `${owner}: scrypt parameters out of range (cost 10–20, blockSize 1–32, parallelization 1–16, N·r·p ≤ 2^21)`,
    );
  }
  return params;
}

/** Canonical unpadded base64, as the PHC string format writes it. */
function b64(bytes: Buffer): string {
  return bytes.toString('base64').replace(/=+$/, '');
}

function decode64(text: string): Buffer | undefined {
  const bytes = Buffer.from(text, 'base64');
  return b64(bytes) === text ? bytes : undefined;
}

function encode(params: Params, salt: Buffer, key: Buffer): string {
  return `$scrypt$ln=${params.ln},r=${params.r},p=${params.p}$${b64(salt)}$${b64(key)}`;
}

function parse(encoded: string): { params: Params; salt: Buffer; key: Buffer } | undefined {
  if (typeof encoded !== 'string') return undefined;
  const m = FORMAT.exec(encoded);
  if (m === null) return undefined;
  const params = { ln: Number(m[1]), r: Number(m[2]), p: Number(m[3]) };
  const salt = decode64(m[4]!);
  const key = decode64(m[5]!);
  if (!withinLimits(params) || salt === undefined || key === undefined) return undefined;
  if (salt.length < 16 || salt.length > 64 || key.length < 16 || key.length > 64) return undefined;
  return { params, salt, key };
}

/**
 * Prepares a password as RFC 8265's OpaqueString profile maps it (the successor of
 * RFC 7613): non-ASCII spaces become U+0020, then NFC. So the same password typed on
 * systems that compose characters differently hashes the same.
 */
function prepare(password: string, owner: string): string {
  if (typeof password !== 'string') throw invalidOption(`${owner}: the password must be a string`);
  return password.replace(/\p{Zs}/gu, ' ').normalize('NFC');
}

function derive(password: string, salt: Buffer, length: number, { ln, r, p }: Params) {
  const n = 2 ** ln;
  const maxmem = 128 * r * (n + p + 2) + 1024 * 1024;
  return new Promise<Buffer>((resolve, reject) => {
    scrypt(password, salt, length, { N: n, r, p, maxmem }, (err, key) =>
      err ? reject(err) : resolve(key),
    );
  });
}

function malformed(): TypeError {
  const error = new TypeError(
    'verifyPassword(): the stored hash is not a `$scrypt$` hash string with parameters in range',
  );
  (error as TypeError & { code: string }).code = 'ERR_INVALID_PASSWORD_HASH';
  return error;
}

/**
 * Hashes a password with scrypt for storage: a random 16-byte salt, a 32-byte key, and the
 * parameters, all in one self-describing string
 * (`$scrypt$ln=15,r=8,p=1$<salt>$<key>`, base64 without padding, as in the PHC string
 * format), so the parameters can be raised later without breaking stored hashes (see
 * {@link needsRehash}). The password is prepared as RFC 8265 OpaqueString (non-ASCII spaces
 * to U+0020, then NFC).
 *
 * @example
 * ```ts
 * const passwordHash = await hashPassword('correct horse battery staple');
 * // '$scrypt$ln=15,r=8,p=1$…$…'
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc7914 | RFC 7914}
 * @see {@link https://www.rfc-editor.org/rfc/rfc8265#section-4.2 | RFC 8265 §4.2} (OpaqueString; obsoletes RFC 7613)
 * @see {@link https://www.rfc-editor.org/rfc/rfc7613#section-4.2 | RFC 7613 §4.2}
 */
export async function hashPassword(
  password: string,
  options?: PasswordHashOptions,
): Promise<string> {
  const params = paramsOf('hashPassword()', options);
  const prepared = prepare(password, 'hashPassword()');
  const salt = randomBytes(SALT_BYTES);
  return encode(params, salt, await derive(prepared, salt, KEY_BYTES, params));
}

const dummies = new Map<string, string>();

/**
 * A hash no password matches (a random key), with the given parameters: verifying against it
 * costs what verifying against a real hash costs.
 */
function dummyHash(params: Params): string {
  const id = `${params.ln},${params.r},${params.p}`;
  let dummy = dummies.get(id);
  if (dummy === undefined) {
    dummy = encode(params, randomBytes(SALT_BYTES), randomBytes(KEY_BYTES));
    dummies.set(id, dummy);
  }
  return dummy;
}

/**
 * Checks a password against a hash from {@link hashPassword}, with the parameters the hash
 * string holds, comparing in constant time (`timingSafeEqual`).
 *
 * When the user is unknown, pass `undefined` as `encoded`: the password is then checked
 * against a dummy hash (with `options`' parameters, the defaults unless given: pass the
 * ones you hash with) and the answer is `false`, after as much work as a real check. So a
 * login's timing does not tell which user names exist.
 *
 * Throws a `TypeError` with code `ERR_INVALID_PASSWORD_HASH`, without running scrypt, for a
 * string that is not such a hash or whose parameters are out of range (N · r · p at most
 * 2^21, 256 MiB): a crafted stored hash cannot make it burn memory or CPU.
 *
 * @example
 * ```ts
 * const user = users.get(username);
 * const ok = await verifyPassword(password, user?.passwordHash);
 * if (!ok || user === undefined) throw invalidCredentials(challenge);
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc7914 | RFC 7914}
 */
export async function verifyPassword(
  password: string,
  encoded: string | undefined,
  options?: PasswordHashOptions,
): Promise<boolean> {
  const dummyParams = paramsOf('verifyPassword()', options);
  const prepared = prepare(password, 'verifyPassword()');
  const unknown = encoded === undefined || encoded === null;
  const parsed = parse(unknown ? dummyHash(dummyParams) : encoded);
  if (parsed === undefined) throw malformed();
  const key = await derive(prepared, parsed.salt, parsed.key.length, parsed.params);
  const equal = timingSafeEqual(key, parsed.key);
  return equal && !unknown;
}

/**
 * Whether a stored hash was made with other parameters than `options` (or is not a hash
 * {@link verifyPassword} takes): after a successful login, hash the password again and store
 * the new hash.
 *
 * @example
 * ```ts
 * if (await verifyPassword(password, user.passwordHash)) {
 *   if (needsRehash(user.passwordHash, { cost: 17 })) {
 *     user.passwordHash = await hashPassword(password, { cost: 17 });
 *   }
 * }
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc7914#section-2 | RFC 7914 §2}
 */
export function needsRehash(encoded: string, options?: PasswordHashOptions): boolean {
  const wanted = paramsOf('needsRehash()', options);
  const parsed = parse(encoded);
  if (parsed === undefined) return true;
  const { ln, r, p } = parsed.params;
  return (
    ln !== wanted.ln ||
    r !== wanted.r ||
    p !== wanted.p ||
    parsed.salt.length !== SALT_BYTES ||
    parsed.key.length !== KEY_BYTES
  );
}
