import type { IncomingMessage } from 'node:http';
import { HttpError } from '../../core/errors/errors.js';
import { readForm } from '../../http/body/body.js';
import { OAuthError } from './errors.js';

/** Largest body of an OAuth endpoint's form: a few parameters, far below the general 1 MiB. */
export const OAUTH_FORM_LIMIT = 64 * 1024;

/**
 * Reads the form of an OAuth endpoint (token, device authorization, revocation,
 * introspection). A body that is not a form, too large, not UTF-8 or with a content coding
 * (`Content-Encoding: gzip`) is `invalid_request` with status 400 (RFC 6749 §5.2, which
 * RFC 7009 and RFC 8628 follow), not a problem: OAuth clients read the RFC 6749 error
 * format. The headers of the body error are kept: `Connection: close` after a too-large
 * body, `Accept-Encoding: identity` after a content coding.
 */
export function readOAuthForm(req: IncomingMessage): Promise<URLSearchParams> {
  return readForm(req, { limit: OAUTH_FORM_LIMIT }).then(undefined, asOAuthFormError);
}

function asOAuthFormError(err: unknown): never {
  if (err instanceof HttpError && err.status < 500) {
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(err.headers)) {
      if (typeof value === 'string') headers[name] = value;
    }
    throw new OAuthError('invalid_request', err.detail, { headers, cause: err });
  }
  throw err;
}
