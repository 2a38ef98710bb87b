import { STATUS_CODES } from 'node:http';
import type { PorticoErrorCode } from './codes.js';

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
  /** A stable code for this kind of failure: one of portico's ({@link PorticoErrorCode}), or yours. */
  readonly code: PorticoErrorCode | (string & {});

  constructor(
    message: string,
    code: PorticoErrorCode | (string & {}),
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** Options of {@link HttpError} beyond its status. */
export interface HttpErrorOptions {
  /** Stable code. @defaultValue `ERR_HTTP_<status>` */
  code?: PorticoErrorCode | (string & {});
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
