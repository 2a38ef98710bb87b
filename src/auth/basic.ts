import type { IncomingMessage } from 'node:http';
import type { Principal } from '../core/principal.js';
import { CONTROL } from '../internal/grammar.js';
import { countFieldLines } from '../internal/headers.js';
import { assertKnownOptions, invalidOption } from '../internal/options.js';
import { type Authenticator, challenge as buildChallenge } from './authenticator.js';
import { invalidAuthRequest, invalidCredentials } from './errors.js';

/**
 * Options of {@link basicAuth}.
 *
 * @see {@link https://www.rfc-editor.org/rfc/rfc7617#section-2 | RFC 7617 §2}
 */
export interface BasicAuthOptions {
  /**
   * Checks a user-id and password (both NFC-normalised, without control characters; the
   * password may hold colons) and answers the principal, or `undefined` to refuse them with
   * a 401. Verify the password with `verifyPassword`, against a dummy hash when the user is
   * unknown, so the time taken does not reveal which user names exist.
   */
  verify: (
    username: string,
    password: string,
    req: IncomingMessage,
  ) => Principal | undefined | Promise<Principal | undefined>;
  /**
   * The realm quoted in the challenge.
   * @defaultValue `'api'`
   */
  realm?: string;
}

const BASIC_OPTIONS = ['verify', 'realm'] as const satisfies readonly (keyof BasicAuthOptions)[];

/** The longest `Authorization: Basic` header looked at; longer ones are refused undecoded. */
const MAX_HEADER_LENGTH = 4096;
/** Canonical padded base64 (RFC 4648 §4): no other characters, no missing padding. */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * The user-id and password of an `Authorization: Basic` header value, or `undefined` when the
 * value is not a well-formed Basic credential: strict base64, valid UTF-8, a colon, a
 * non-empty user-id and no control characters. The split is at the first colon, since the
 * user-id cannot hold one and the password may. Both parts are NFC-normalised (RFC 7617
 * §2.1). Throws nothing.
 *
 * @example
 * ```ts
 * parseBasicCredentials('Basic dXNlcjpwYTpzcw=='); // { username: 'user', password: 'pa:ss' }
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc7617#section-2 | RFC 7617 §2}
 */
export function parseBasicCredentials(
  value: string,
): { username: string; password: string } | undefined {
  if (typeof value !== 'string' || value.length > MAX_HEADER_LENGTH) return undefined;
  const match = /^basic +([^ ]*)$/i.exec(value);
  if (match === null) return undefined;
  const encoded = match[1]!;
  if (encoded === '' || !BASE64.test(encoded)) return undefined;
  const bytes = Buffer.from(encoded, 'base64');
  // refuse non-zero padding bits: only the canonical encoding of these bytes is accepted
  if (bytes.toString('base64') !== encoded) return undefined;
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return undefined;
  }
  const colon = text.indexOf(':');
  if (colon <= 0 || CONTROL.test(text)) return undefined;
  return {
    username: text.slice(0, colon).normalize('NFC'),
    password: text.slice(colon + 1).normalize('NFC'),
  };
}

/**
 * Authenticates requests with HTTP Basic (RFC 7617) over UTF-8: the challenge is
 * `Basic realm="api", charset="UTF-8"`. No `Authorization: Basic` header: the
 * authenticator passes. A malformed one (bad base64, not UTF-8, no colon, control
 * characters, over 4 KiB) or credentials that `verify` refuses: 401 `invalid-credentials`,
 * never a 500 and never quoting what was sent. Basic sends the password with every
 * request: serve it over HTTPS only.
 *
 * @example
 * ```ts
 * const basic = basicAuth({
 *   async verify(username, password) {
 *     const user = users.get(username);
 *     const ok = await verifyPassword(password, user?.passwordHash); // dummy hash if unknown
 *     return ok && user ? { sub: user.id, scopes: [], method: 'basic' } : undefined;
 *   },
 * });
 * app.use(authenticate([basic]));
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc7617 | RFC 7617}
 * @see {@link https://www.rfc-editor.org/rfc/rfc7617#section-2.1 | RFC 7617 §2.1} (the `charset` parameter)
 */
export function basicAuth(options: BasicAuthOptions): Authenticator {
  assertKnownOptions('basicAuth()', options, BASIC_OPTIONS);
  const verify = options?.verify;
  if (typeof verify !== 'function') {
    throw invalidOption('basicAuth(): `verify` must be a function of (username, password, req)');
  }
  const realm = options.realm ?? 'api';
  if (typeof realm !== 'string') throw invalidOption('basicAuth(): `realm` must be a string');
  const challenge = buildChallenge('Basic', { realm, charset: 'UTF-8' });
  const invalid = () => invalidCredentials(challenge, 'The user name or password is not valid.');

  return {
    scheme: 'Basic',
    challenge,
    headers: ['Authorization'],
    async authenticate(req) {
      const header = req.headers.authorization;
      if (typeof header !== 'string' || !/^basic(?: |$)/i.test(header)) return undefined;
      // node keeps only the first Authorization line: refuse a second rather than ignore it
      if (countFieldLines(req.rawHeaders, 'authorization') > 1)
        throw invalidAuthRequest('Send one Authorization header.', challenge);
      const credentials = parseBasicCredentials(header);
      if (credentials === undefined) throw invalid();
      const principal = await verify(credentials.username, credentials.password, req);
      if (principal === undefined || principal === null) throw invalid();
      return principal;
    },
  };
}
