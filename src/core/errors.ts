import { STATUS_CODES } from 'node:http';

/**
 * One problem with one field of a request, as carried in the `errors` member of a
 * validation problem.
 */
export interface FieldError {
  /** The field, as a JSON Pointer (`/text`) or a parameter name (`channel`). */
  field: string;
  /** What is wrong with it, in words fit for the caller. */
  message: string;
}

/**
 * The base of every error portico throws. Each carries a stable, machine-readable `code`
 * (`ERR_…`) that tests and callers can branch on; messages are for humans and never
 * contain a token, secret or password.
 *
 * @example
 * ```ts
 * try { await readJson(req) } catch (err) {
 *   if (err instanceof PorticoError && err.code === 'ERR_BODY_TOO_LARGE') { … }
 * }
 * ```
 */
export class PorticoError extends Error {
  /** A stable code for this kind of failure. */
  readonly code: string;

  constructor(message: string, code: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** Options of {@link HttpError} beyond its status. */
export interface HttpErrorOptions {
  /** Stable code. @defaultValue `ERR_HTTP_<status>` */
  code?: string;
  /**
   * Problem type URI (RFC 9457 §3.1.1).
   * @defaultValue `"about:blank"`, whose title is the status phrase
   */
  type?: string;
  /** Short summary of the problem type. @defaultValue the HTTP status phrase */
  title?: string;
  /**
   * Headers the response must carry, e.g. `Retry-After`, `WWW-Authenticate`, `Allow`. An
   * array value becomes one header line per element (several challenges, RFC 9110 §11.6.1).
   * @defaultValue `{}` (no extra headers)
   */
  headers?: Readonly<Record<string, string | readonly string[]>>;
  /** Per-field validation problems, rendered as `errors`. @defaultValue none */
  errors?: readonly FieldError[];
  /**
   * Further problem members (RFC 9457 §3.2 extensions). Never put secrets here.
   * @defaultValue none
   */
  extensions?: Readonly<Record<string, unknown>>;
  /** The underlying error; kept for logs, never rendered. @defaultValue none */
  cause?: unknown;
}

/**
 * Base of the problem type URIs that portico itself defines: a problem built with
 * `typeSlug: 'validation'` has the `type` `urn:portico:problem:validation`.
 *
 * @example
 * ```ts
 * if (problem.type.startsWith(PROBLEM_TYPE_BASE)) metrics.count(problem.type);
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9457#section-3.1.1 | RFC 9457 §3.1.1}
 */
export const PROBLEM_TYPE_BASE = 'urn:portico:problem:';

/**
 * An error that is an HTTP answer. It renders itself as an RFC 9457 Problem Details
 * object and carries the headers its status demands (`WWW-Authenticate` on 401, `Allow` on
 * 405, `Retry-After` on 429 and 503).
 *
 * @example
 * ```ts
 * throw new HttpError(409, 'A message with this id already exists.', { code: 'ERR_DUPLICATE' });
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9457 | RFC 9457}
 */
export class HttpError extends PorticoError {
  /** HTTP status code, 400–599. */
  readonly status: number;
  /** Problem type URI. */
  readonly type: string;
  /** Short, human-readable summary of the problem type. */
  readonly title: string;
  /** Explanation specific to this occurrence. */
  readonly detail: string;
  /** Headers the response must carry. */
  readonly headers: Readonly<Record<string, string | readonly string[]>>;
  /** Per-field validation problems. */
  readonly errors: readonly FieldError[] | undefined;
  /** Extension members. */
  readonly extensions: Readonly<Record<string, unknown>> | undefined;

  constructor(status: number, detail?: string, options: HttpErrorOptions = {}) {
    if (!Number.isInteger(status) || status < 400 || status > 599) {
      throw new TypeError(`HttpError status must be an integer 400–599, got ${String(status)}`);
    }
    const title = options.title ?? STATUS_CODES[status] ?? 'Error';
    super(detail ?? title, options.code ?? `ERR_HTTP_${status}`, { cause: options.cause });
    this.status = status;
    this.type = options.type ?? 'about:blank';
    this.title = title;
    this.detail = detail ?? title;
    this.headers = options.headers ?? {};
    this.errors = options.errors;
    this.extensions = options.extensions;
  }

  /**
   * `true` below 500, like `http-errors`' `expose`, for frameworks that read it (Koa's default
   * error handler shows the message only when it is set). portico itself renders an
   * `HttpError`'s `detail` as given at every status: write a 5xx detail for the caller, and
   * put internals in `cause` (logged, never rendered).
   */
  get expose(): boolean {
    return this.status < 500;
  }
}

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
  /** Short name appended to {@link PROBLEM_TYPE_BASE} to form the problem `type`. */
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
