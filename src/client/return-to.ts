// Where a sign-in returns to: a path of this application's own origin, never anywhere else
// (an open redirect would turn the sign-in into a phishing relay).

import { CONTROL } from '../internal/grammar.js';

const MAX_RETURN_TO = 2048;

/**
 * `returnTo` as a same-origin path, query and fragment of `base`, or `undefined` when it
 * is not one: absolute URLs of another origin, scheme-relative `//host`, backslashes, control
 * characters and oversized values are all refused.
 */
export function sameOriginPath(returnTo: unknown, base: URL): string | undefined {
  if (typeof returnTo !== 'string' || returnTo.length > MAX_RETURN_TO) return undefined;
  if (
    !returnTo.startsWith('/') ||
    returnTo.startsWith('//') ||
    // a backslash some browsers read as a slash; control characters
    returnTo.includes('\\') ||
    CONTROL.test(returnTo)
  ) {
    return undefined;
  }
  let url: URL;
  try {
    url = new URL(returnTo, base);
  } catch {
    return undefined;
  }
  if (url.origin !== base.origin) return undefined;
  return `${url.pathname}${url.search}${url.hash}`;
}
