import { OAuthError } from './errors.js';

/**
 * The parameters of a form request, each present at most once (RFC 6749 §3.2).
 *
 * @example
 * ```ts
 * const params = singleParams(await readForm(req)); // throws invalid_request for `scope=a&scope=b`
 * params.get('grant_type');
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc6749#section-3.2 | RFC 6749 §3.2}
 */
export function singleParams(form: URLSearchParams): Map<string, string> {
  const params = new Map<string, string>();
  for (const [name, value] of form) {
    if (params.has(name))
      throw new OAuthError('invalid_request', `The parameter ${name} is repeated.`);
    params.set(name, value);
  }
  return params;
}
