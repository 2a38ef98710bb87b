import { HttpError } from '../core/errors/http-error.js';
import { quoteParam } from './authenticator.js';

// Not part of the public API: reads the challenges of a `WWW-Authenticate` field (RFC 9110
// §11.6.1) to add the parameters of a protected resource (RFC 9728 §5.1) to those of the
// access-token schemes, and to put `Bearer` first (the MCP SDK reads only the first).

/** One challenge of a `WWW-Authenticate` field, as written, with its parameter names. */
interface ParsedChallenge {
  /** The scheme, lower-cased. */
  readonly scheme: string;
  /** The challenge as written (scheme and parameters), without the separating comma. */
  readonly text: string;
  /** The names of its auth-params, lower-cased (empty for a bare scheme or a token68). */
  readonly names: ReadonlySet<string>;
  /** Whether it carries a token68 instead of parameters (nothing can be added to it). */
  readonly token68: boolean;
}

const TCHAR = /[!#$%&'*+\-.^_`|~0-9A-Za-z]/;
const TOKEN68_CHAR = /[A-Za-z0-9\-._~+/]/;

/**
 * The challenges of one `WWW-Authenticate` field value, or `undefined` when it does not
 * follow RFC 9110 §11.6.1 (the value is then left as it is).
 */
export function parseChallenges(value: string): ParsedChallenge[] | undefined {
  const out: ParsedChallenge[] = [];
  const n = value.length;
  let i = 0;
  const ows = () => {
    while (value[i] === ' ' || value[i] === '\t') i++;
  };
  const token = () => {
    const start = i;
    while (i < n && TCHAR.test(value[i]!)) i++;
    return value.slice(start, i);
  };
  /** Reads a quoted-string at `i`; false when it does not end. */
  const quoted = () => {
    i++;
    while (i < n && value[i] !== '"') i += value[i] === '\\' ? 2 : 1;
    if (value[i] !== '"') return false;
    i++;
    return true;
  };
  for (;;) {
    while (value[i] === ' ' || value[i] === '\t' || value[i] === ',') i++;
    if (i >= n) return out;
    const start = i;
    const scheme = token();
    if (scheme === '') return undefined;
    let end = i;
    const names = new Set<string>();
    let token68 = false;
    if (value[i] === ' ' || value[i] === '\t') {
      ows();
      for (;;) {
        const at = i;
        const name = token();
        ows();
        if (name !== '' && value[i] === '=') {
          i++;
          ows();
          if (value[i] === '"') {
            if (!quoted()) return undefined;
          } else if (i < n && TCHAR.test(value[i]!)) {
            token();
          } else if (names.size === 0) {
            // `abc==`: a token68 (its padding is no parameter's `=`)
            i = at;
            while (i < n && TOKEN68_CHAR.test(value[i]!)) i++;
            while (value[i] === '=') i++;
            token68 = true;
            end = i;
            break;
          } else {
            return undefined;
          }
          names.add(name.toLowerCase());
          end = i;
        } else if (name !== '' && names.size === 0 && (i >= n || value[i] === ',')) {
          // a token68 without padding, e.g. `Negotiate abc`
          token68 = true;
          end = at + name.length;
          i = end;
          break;
        } else {
          // the next challenge's scheme (or the end)
          i = at;
          break;
        }
        ows();
        if (value[i] !== ',') break;
        while (value[i] === ',' || value[i] === ' ' || value[i] === '\t') i++;
      }
    }
    out.push({ scheme: scheme.toLowerCase(), text: value.slice(start, end), names, token68 });
    // the next challenge follows a comma (consumed with the parameters' own, or next)
  }
}

/** The access-token schemes whose challenges carry a resource's parameters. */
const TOKEN_SCHEMES = new Set(['bearer', 'dpop']);

/** What {@link resourceChallenges} adds. */
export interface ResourceParams {
  /** The metadata URL of the resource (RFC 9728 §5.1). */
  readonly resourceMetadata?: string | undefined;
  /** The scopes the request needs (RFC 6750 §3), on 401s only. */
  readonly scope?: string | undefined;
  /**
   * The bare `Bearer` challenge to put first when the answer has none (a bearer
   * authenticator is configured), or `undefined`.
   */
  readonly bearer?: string | undefined;
}

function addParams(challenge: ParsedChallenge, params: Record<string, string | undefined>) {
  if (!TOKEN_SCHEMES.has(challenge.scheme) || challenge.token68) return challenge.text;
  const added: string[] = [];
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined && !challenge.names.has(name)) {
      added.push(`${name}=${quoteParam(value)}`);
    }
  }
  if (added.length === 0) return challenge.text;
  return `${challenge.text}${challenge.names.size === 0 ? ' ' : ', '}${added.join(', ')}`;
}

/**
 * The challenges of `values` (one `WWW-Authenticate` field value each), with the resource's
 * parameters added to each `Bearer` and `DPoP` one and `Bearer` first: `status` 401 adds
 * `scope` too, and `params.bearer` first when no `Bearer` nor `DPoP` challenge is there.
 */
export function resourceChallenges(
  values: readonly string[],
  params: ResourceParams,
  status: number,
): string[] {
  const unauthorized = status === 401;
  const add = {
    resource_metadata: params.resourceMetadata,
    ...(unauthorized && { scope: params.scope }),
  };
  const bearer: string[] = [];
  const rest: string[] = [];
  let tokenScheme = false;
  for (const value of values) {
    const parsed = parseChallenges(value);
    if (parsed === undefined) {
      rest.push(value);
      continue;
    }
    for (const challenge of parsed) {
      if (TOKEN_SCHEMES.has(challenge.scheme)) tokenScheme = true;
      (challenge.scheme === 'bearer' ? bearer : rest).push(addParams(challenge, add));
    }
  }
  // a refused DPoP proof or token is answered in its own scheme (RFC 9449 §7.1); any other
  // 401 (no credential, a refused API key) offers Bearer first
  if (unauthorized && !tokenScheme && params.bearer !== undefined) {
    const parsed = parseChallenges(params.bearer)?.[0];
    if (parsed !== undefined) bearer.push(addParams(parsed, add));
  }
  return [...bearer, ...rest];
}

/** The first bare `Bearer` challenge among `challenges` (the configured ones), if any. */
export function bareBearerChallenge(challenges: readonly string[]): string | undefined {
  for (const value of challenges) {
    const found = parseChallenges(value)?.find((c) => c.scheme === 'bearer' && !c.token68);
    if (found !== undefined) return found.text;
  }
  return undefined;
}

/**
 * `error` with the resource's parameters in its `WWW-Authenticate` challenges (see
 * {@link resourceChallenges}), for a 401, or a 400/403 that has challenges; others as they are.
 */
export function withResourceParams(error: unknown, params: ResourceParams): unknown {
  if (!(error instanceof HttpError)) return error;
  const { status } = error;
  if (status !== 401 && status !== 403 && status !== 400) return error;
  const name = Object.keys(error.headers).find((h) => h.toLowerCase() === 'www-authenticate');
  const given = name === undefined ? undefined : error.headers[name];
  if (given === undefined && status !== 401) return error;
  const values = given === undefined ? [] : typeof given === 'string' ? [given] : given;
  const challenges = resourceChallenges(values, params, status);
  const headers: Record<string, string | readonly string[]> = {};
  for (const [key, value] of Object.entries(error.headers)) {
    if (key !== name) headers[key] = value;
  }
  if (challenges.length > 0) headers['WWW-Authenticate'] = challenges;
  return new HttpError(status, error.detail, {
    code: error.code,
    type: error.type,
    title: error.title,
    errors: error.errors,
    extensions: error.extensions,
    cause: error.cause,
    headers,
  });
}
