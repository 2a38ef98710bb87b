import {
  type FieldError,
  HttpError,
  type HttpErrorOptions,
  PROBLEM_TYPE_BASE,
} from './http-error.js';

export {
  type FieldError,
  HttpError,
  type HttpErrorOptions,
  PorticoError,
  PROBLEM_TYPE_BASE,
} from './http-error.js';

/** `Retry-After` as whole seconds (RFC 9110 §10.2.3); a non-finite value is a programming error. */
function retryAfterSeconds(seconds: number): string {
  if (typeof seconds !== 'number' || !Number.isFinite(seconds)) {
    throw new TypeError(`Retry-After needs a finite number of seconds, got ${String(seconds)}`);
  }
  return String(Math.max(0, Math.ceil(seconds)));
}

function problemType(slug: string | undefined): string | undefined {
  return slug === undefined ? undefined : PROBLEM_TYPE_BASE + slug;
}

/** The extra options every status helper takes. */
export type HttpErrorExtra = Omit<HttpErrorOptions, 'type'> & {
  /** Short name appended to `PROBLEM_TYPE_BASE` to form the problem `type`. */
  typeSlug?: string;
  /** Full problem type URI; wins over `typeSlug`. */
  type?: string;
};

function make(
  status: number,
  code: string,
  detail: string | undefined,
  extra: HttpErrorExtra = {},
) {
  const { typeSlug, type, ...rest } = extra;
  return new HttpError(status, detail, {
    code,
    ...rest,
    type: type ?? problemType(typeSlug),
  });
}

/**
 * 400: the request is malformed (invalid JSON, a missing parameter).
 *
 * @example
 * ```ts
 * if (!url.searchParams.has('channel')) throw badRequest('The `channel` parameter is required.');
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-15.5.1 | RFC 9110 §15.5.1}
 */
export const badRequest = (detail?: string, extra?: HttpErrorExtra) =>
  make(400, 'ERR_BAD_REQUEST', detail, extra);
/**
 * 401: not authenticated. Pass the challenge(s) for `WWW-Authenticate` (RFC 9110 §11.6.1).
 * @example
 * ```ts
 * throw unauthorized('The access token expired.', { challenge: 'Bearer error="invalid_token"' });
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-15.5.2 | RFC 9110 §15.5.2}
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-11.6.1 | RFC 9110 §11.6.1}
 */
export const unauthorized = (
  detail?: string,
  extra: HttpErrorExtra & { challenge?: string | readonly string[] } = {},
) => {
  const { challenge, headers, ...rest } = extra;
  return make(401, 'ERR_UNAUTHORIZED', detail, {
    ...rest,
    headers:
      challenge && challenge.length > 0 ? { ...headers, 'WWW-Authenticate': challenge } : headers,
  });
};
/**
 * 403: authenticated, without the rights.
 *
 * @example
 * ```ts
 * if (message.author !== principal.sub) throw forbidden('Only the author may edit a message.');
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-15.5.4 | RFC 9110 §15.5.4}
 */
export const forbidden = (detail?: string, extra?: HttpErrorExtra) =>
  make(403, 'ERR_FORBIDDEN', detail, extra);
/**
 * 404: no such resource.
 *
 * @example
 * ```ts
 * const message = messages.get(id);
 * if (message === undefined) throw notFound(`No message ${id}.`);
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-15.5.5 | RFC 9110 §15.5.5}
 */
export const notFound = (detail?: string, extra?: HttpErrorExtra) =>
  make(404, 'ERR_NOT_FOUND', detail, extra);
/**
 * 405: the method is not supported here; `allow` lists those that are.
 *
 * @example
 * ```ts
 * throw methodNotAllowed(['GET', 'HEAD']); // 405 with `Allow: GET, HEAD`
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-15.5.6 | RFC 9110 §15.5.6}
 */
export const methodNotAllowed = (
  allow: readonly string[],
  detail?: string,
  extra?: HttpErrorExtra,
) =>
  make(405, 'ERR_METHOD_NOT_ALLOWED', detail, {
    ...extra,
    headers: { ...extra?.headers, Allow: allow.join(', ') },
  });
/**
 * 406: no representation the client accepts.
 *
 * @example
 * ```ts
 * if (!accepts.includes('application/json')) throw notAcceptable('Only JSON is served here.');
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-15.5.7 | RFC 9110 §15.5.7}
 */
export const notAcceptable = (detail?: string, extra?: HttpErrorExtra) =>
  make(406, 'ERR_NOT_ACCEPTABLE', detail, extra);
/**
 * 409: conflict with the resource's state (duplicate, obsolete version).
 *
 * @example
 * ```ts
 * if (channels.has(name)) throw conflict(`The channel ${name} already exists.`);
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-15.5.10 | RFC 9110 §15.5.10}
 */
export const conflict = (detail?: string, extra?: HttpErrorExtra) =>
  make(409, 'ERR_CONFLICT', detail, extra);
/**
 * 410: the resource existed and is gone.
 *
 * @example
 * ```ts
 * if (deleted.has(id)) throw gone(`The message ${id} was deleted.`);
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-15.5.11 | RFC 9110 §15.5.11}
 */
export const gone = (detail?: string, extra?: HttpErrorExtra) =>
  make(410, 'ERR_GONE', detail, extra);
/**
 * 412: a precondition (`If-Match`, `If-Unmodified-Since`) failed.
 *
 * @example
 * ```ts
 * if (req.headers['if-match'] !== etag) throw preconditionFailed('The message changed meanwhile.');
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-15.5.13 | RFC 9110 §15.5.13}
 */
export const preconditionFailed = (detail?: string, extra?: HttpErrorExtra) =>
  make(412, 'ERR_PRECONDITION_FAILED', detail, extra);
/**
 * 413: the request body is larger than allowed.
 *
 * @example
 * ```ts
 * if (size > 1_048_576) throw contentTooLarge('The upload is limited to 1 MiB.');
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-15.5.14 | RFC 9110 §15.5.14}
 */
export const contentTooLarge = (detail?: string, extra?: HttpErrorExtra) =>
  make(413, 'ERR_BODY_TOO_LARGE', detail, extra);
/**
 * 415: the body's media type is not one this handler takes.
 *
 * @example
 * ```ts
 * throw unsupportedMediaType('Send `application/json`.');
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-15.5.16 | RFC 9110 §15.5.16}
 */
export const unsupportedMediaType = (detail?: string, extra?: HttpErrorExtra) =>
  make(415, 'ERR_UNSUPPORTED_MEDIA_TYPE', detail, extra);
/**
 * 422: the request is well-formed but fails validation; `errors` names each field.
 * @example
 * ```ts
 * throw unprocessable([{ field: '/text', message: 'must be 1–1000 characters' }]);
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-15.5.21 | RFC 9110 §15.5.21}
 */
export const unprocessable = (
  errors: readonly FieldError[],
  detail?: string,
  extra?: HttpErrorExtra,
) =>
  make(422, 'ERR_VALIDATION', detail ?? 'The request failed validation.', {
    typeSlug: 'validation',
    title: 'Validation failed',
    ...extra,
    errors,
  });
/**
 * 428: the request must be conditional.
 *
 * @example
 * ```ts
 * if (req.headers['if-match'] === undefined) throw preconditionRequired('Send If-Match.');
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc6585#section-3 | RFC 6585 §3}
 */
export const preconditionRequired = (detail?: string, extra?: HttpErrorExtra) =>
  make(428, 'ERR_PRECONDITION_REQUIRED', detail, extra);
/**
 * 429: over a rate limit; `retryAfter` in seconds becomes `Retry-After`.
 *
 * @example
 * ```ts
 * throw tooManyRequests(30); // 429 with `Retry-After: 30`
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc6585#section-4 | RFC 6585 §4}
 */
export const tooManyRequests = (retryAfter: number, detail?: string, extra?: HttpErrorExtra) =>
  make(429, 'ERR_RATE_LIMITED', detail, {
    ...extra,
    headers: { ...extra?.headers, 'Retry-After': retryAfterSeconds(retryAfter) },
  });
/**
 * 500: an unexpected failure. The `detail` is shown to the caller as given (default: the
 * status title), so leave internals out of it: `cause` is logged, never rendered.
 *
 * @example
 * ```ts
 * throw internalError(undefined, { cause: err }); // the cause is logged, never rendered
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-15.6.1 | RFC 9110 §15.6.1}
 */
export const internalError = (detail?: string, extra?: HttpErrorExtra) =>
  make(500, 'ERR_INTERNAL', detail, extra);
/**
 * 501: not implemented.
 *
 * @example
 * ```ts
 * throw notImplemented('Exports are not available yet.');
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-15.6.2 | RFC 9110 §15.6.2}
 */
export const notImplemented = (detail?: string, extra?: HttpErrorExtra) =>
  make(501, 'ERR_NOT_IMPLEMENTED', detail, extra);
/**
 * 502: an upstream answered with something invalid.
 *
 * @example
 * ```ts
 * if (!upstream.ok) throw badGateway('The search service answered with an error.');
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-15.6.3 | RFC 9110 §15.6.3}
 */
export const badGateway = (detail?: string, extra?: HttpErrorExtra) =>
  make(502, 'ERR_BAD_GATEWAY', detail, extra);
/**
 * 503: maintenance or overload; `retryAfter` in seconds becomes `Retry-After` when given.
 *
 * @example
 * ```ts
 * if (maintenance) throw serviceUnavailable(120); // 503 with `Retry-After: 120`
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-15.6.4 | RFC 9110 §15.6.4}
 */
export const serviceUnavailable = (retryAfter?: number, detail?: string, extra?: HttpErrorExtra) =>
  make(503, 'ERR_UNAVAILABLE', detail, {
    ...extra,
    headers:
      retryAfter === undefined
        ? extra?.headers
        : { ...extra?.headers, 'Retry-After': retryAfterSeconds(retryAfter) },
  });
/**
 * 504: an upstream was too slow.
 *
 * @example
 * ```ts
 * throw gatewayTimeout('The search service did not answer in time.', { cause: err });
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-15.6.5 | RFC 9110 §15.6.5}
 */
export const gatewayTimeout = (detail?: string, extra?: HttpErrorExtra) =>
  make(504, 'ERR_GATEWAY_TIMEOUT', detail, extra);
