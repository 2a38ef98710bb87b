import {
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type ServerResponse,
  validateHeaderName,
  validateHeaderValue,
} from 'node:http';
import { targetPath } from '../internal/target.js';
import { getRequestId } from './context.js';
import { type FieldError, HttpError, internalError } from './errors/errors.js';
import { fromFrameworkBodyError } from './errors/framework.js';
import { defaultLogger, type Logger, log } from './logger.js';
import { send } from './send.js';
import { requestFields } from './trace-context.js';

/**
 * The Problem Details media type (RFC 9457 §3).
 *
 * @example
 * ```ts
 * res.setHeader('Content-Type', PROBLEM_TYPE); // 'application/problem+json'
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9457#section-3 | RFC 9457 §3}
 */
export const PROBLEM_TYPE = 'application/problem+json';

/**
 * A Problem Details object (RFC 9457) as portico renders it.
 * @see {@link https://www.rfc-editor.org/rfc/rfc9457#section-3 | RFC 9457 §3}
 */
export interface ProblemDetails {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance: string;
  /** The request id to quote when reporting the problem. */
  requestId?: string;
  errors?: FieldError[];
  [extension: string]: unknown;
}

/** Options of {@link sendError} and the adapters' error handling. */
export interface ErrorHandlerOptions {
  /**
   * Where an error that becomes a 5xx is logged, with its request, before the answer is
   * written: one `error` line, `{ component: 'http', event: 'request.failed', method, path,
   * requestId, traceId, spanId, err }` (the path without its query, which may hold an
   * `api_key`; no header, no body). A pino logger is passed as it is.
   * @defaultValue portico's default logger: that line on stderr
   */
  logger?: Logger;
}

function report(error: unknown, req: IncomingMessage, options: ErrorHandlerOptions): void {
  log(
    options.logger ?? defaultLogger,
    'error',
    {
      component: 'http',
      event: 'request.failed',
      method: req.method,
      path: requestPath(req),
      ...requestFields(req),
      err: error,
    },
    'a request failed unexpectedly',
  );
}

/**
 * The request's path without its query, which may hold credentials (`api_key`). A request
 * target in absolute form (`GET http://host/api/messages`, RFC 9112 §3.2.2) gives its path
 * (`/` when it has none).
 *
 * @example
 * ```ts
 * // GET /api/messages?api_key=secret, or GET http://api.example.com/api/messages
 * requestPath(req); // '/api/messages'
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9112#section-3.2.2 | RFC 9112 §3.2.2}
 */
export function requestPath(req: IncomingMessage): string {
  const url = ((req as { originalUrl?: string }).originalUrl ?? req.url ?? '/') as string;
  return targetPath(url);
}

function statusOf(value: unknown): number | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as { status?: unknown; statusCode?: unknown };
  const status = typeof v.status === 'number' ? v.status : v.statusCode;
  return typeof status === 'number' && Number.isInteger(status) && status >= 400 && status <= 599
    ? status
    : undefined;
}

/**
 * Turns any thrown value into an {@link HttpError}: portico's own errors as they are, errors
 * with a `toHttpError()` method by what it returns, what a framework's body parser refused
 * (`express.json()` and body-parser's other parsers, Fastify's) as portico's readers answer
 * the same mistake (invalid JSON as `urn:portico:problem:invalid-json` with its line and
 * column where the error holds the text, a body too large as a 413, a charset or content
 * coding refused as a 415; never the framework's message), other errors
 * of the `http-errors` kind (Express, Koa's `ctx.throw`) by their `status` and `expose`,
 * anything else into a 500 whose detail reveals nothing.
 *
 * @example
 * ```ts
 * const error = toHttpError(new Error('boom')); // a 500 whose detail reveals nothing
 * error.status; // 500
 * toHttpError(notFound()).status; // 404, the same object
 * // express.json() refused `{"a":1,}`
 * toHttpError(err).type; // 'urn:portico:problem:invalid-json'
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9457 | RFC 9457}
 */
export function toHttpError(error: unknown): HttpError {
  if (error instanceof HttpError) return error;
  // errors that know their HTTP answer (a refused JWT, say) give it themselves
  const own = (error as { toHttpError?: unknown } | null)?.toHttpError;
  if (typeof own === 'function') {
    const mapped = (own as () => unknown).call(error);
    if (mapped instanceof HttpError) return mapped;
  }
  // what a framework's body parser refused: the problem portico's readers give for it
  const parsed = fromFrameworkBodyError(error);
  if (parsed !== undefined) return parsed;
  const status = statusOf(error);
  if (status !== undefined) {
    const e = error as { expose?: boolean; message?: string; headers?: Record<string, unknown> };
    const expose = e.expose ?? status < 500;
    const headers: Record<string, string> = {};
    if (e.headers && typeof e.headers === 'object') {
      for (const [k, v] of Object.entries(e.headers)) if (typeof v === 'string') headers[k] = v;
    }
    return new HttpError(status, expose && typeof e.message === 'string' ? e.message : undefined, {
      headers,
      cause: error,
    });
  }
  return internalError(undefined, { cause: error });
}

/**
 * Picks the JSON media type for a problem answer: `application/problem+json` unless the
 * client accepts `application/json` but not the problem type (RFC 9457 §3).
 *
 * @example
 * ```ts
 * problemContentType('application/json'); // 'application/json'
 * problemContentType('application/problem+json, application/json'); // 'application/problem+json'
 * problemContentType(undefined); // 'application/problem+json'
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9457#section-3 | RFC 9457 §3}
 */
export function problemContentType(accept: string | undefined): string {
  if (!accept) return PROBLEM_TYPE;
  let problemQ: number | undefined;
  let jsonQ = 0;
  let wildcardQ = 0;
  for (const part of accept.split(',')) {
    const [rangeText = '', ...params] = part.split(';');
    const range = rangeText.trim().toLowerCase();
    let q = 1;
    for (const param of params) {
      const [name, value] = param.split('=');
      if (name?.trim().toLowerCase() === 'q') q = Number(value?.trim()) || 0;
    }
    if (range === PROBLEM_TYPE) problemQ = q;
    else if (range === 'application/json') jsonQ = Math.max(jsonQ, q);
    else if (range === '*/*' || range === 'application/*') wildcardQ = Math.max(wildcardQ, q);
  }
  const problemAccepted = problemQ === undefined ? wildcardQ > 0 : problemQ > 0;
  if (problemAccepted) return PROBLEM_TYPE;
  return jsonQ > 0 ? 'application/json' : PROBLEM_TYPE;
}

/**
 * Builds the Problem Details object of an error for this request.
 *
 * @example
 * ```ts
 * const problem = toProblem(notFound('No message 42.'), req);
 * // { type: 'about:blank', title: 'Not Found', status: 404, detail: 'No message 42.',
 * //   instance: '/api/messages/42', requestId: '…' }
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9457#section-3.1 | RFC 9457 §3.1}
 */
export function toProblem(error: HttpError, req: IncomingMessage): ProblemDetails {
  const requestId = getRequestId(req);
  const problem: ProblemDetails = {
    ...error.extensions,
    type: error.type,
    title: error.title,
    status: error.status,
    detail: error.detail,
    instance: requestPath(req),
  };
  if (requestId !== undefined) problem.requestId = requestId;
  if (error.errors !== undefined) problem.errors = error.errors.map((e) => ({ ...e }));
  return problem;
}

/**
 * An error's `Set-Cookie` (clearing a session, say) joins the cookies already set (`earlier`),
 * never replaces them: the header to set instead of the error's, if any.
 *
 * @internal
 */
export function withEarlierCookies(
  earlier: number | string | readonly string[] | undefined,
  headers: HttpError['headers'],
): OutgoingHttpHeaders | undefined {
  const name = Object.keys(headers).find((key) => key.toLowerCase() === 'set-cookie');
  if (name === undefined) return undefined;
  if (earlier === undefined) return undefined;
  const added = headers[name]!;
  return {
    [name]: [
      ...(Array.isArray(earlier) ? earlier : [String(earlier)]),
      ...(typeof added === 'string' ? [added] : added),
    ],
  };
}

/**
 * Headers describing a representation that an error answer must not inherit.
 *
 * @internal
 */
export const REPRESENTATION_HEADERS: readonly string[] = [
  'content-type',
  'content-length',
  'content-encoding',
  'content-language',
  'content-disposition',
  'content-range',
  'etag',
  'last-modified',
  'location',
];

/** An error rendered as Problem Details: what {@link sendError} writes. */
export interface RenderedError {
  /** The problem's status, 400–599. */
  status: number;
  /**
   * The headers of the answer: the error's own (`WWW-Authenticate`, `Allow`, `Retry-After`,
   * `Set-Cookie`…), `Content-Type` (`application/problem+json`, or `application/json` for a
   * client that accepts only that) and `Cache-Control: no-store`. Not `Content-Length`, which
   * belongs to whoever writes the body. A `Set-Cookie` here joins the cookies already set on
   * the response; it must not replace them.
   */
  headers: Record<string, string | string[]>;
  /** The Problem Details object, serialized as JSON. */
  body: string;
}

/**
 * Renders the answer for `error` without writing it: its status, headers and JSON body, as
 * {@link sendError} would send them — portico errors as they are, anything unexpected as a
 * 500 quoting the request id (a 5xx is logged to the `logger`, and its details never reach
 * the body). For a host that answers through its own machinery (Fastify's `reply.send`, a
 * custom framework) rather than on the raw response. Whoever writes it should, as
 * `sendError` does: drop the representation headers already on the response
 * (`Content-Type`, `Content-Length`, `ETag`, `Location`…) and keep the others (CORS, request
 * id, rate limits), add `Set-Cookie` to the cookies already set, set `Content-Length`, and
 * send no body to a HEAD request.
 *
 * @example
 * ```ts
 * // GET /api/messages/42
 * const { status, headers, body } = renderError(req, notFound('No message 42.'));
 * status; // 404
 * headers; // { 'Content-Type': 'application/problem+json', 'Cache-Control': 'no-store' }
 * body; // '{"type":"about:blank","title":"Not Found","status":404,"detail":"No message 42.","instance":"/api/messages/42"}'
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9457 | RFC 9457}
 */
export function renderError(
  req: IncomingMessage,
  error: unknown,
  options: ErrorHandlerOptions = {},
): RenderedError {
  const httpError = toHttpError(error);
  reportServerError(httpError, req, options);
  return renderHttpError(httpError, error, req, options);
}

/**
 * A 5xx goes to the logger, but a 503 answered on purpose without a cause (maintenance, load
 * shedding, a readiness probe saying no): those are answers, not failures, and logging each
 * would cost most when the process can least afford it.
 */
function reportServerError(
  httpError: HttpError,
  req: IncomingMessage,
  options: ErrorHandlerOptions,
): void {
  if (isServerFailure(httpError)) report(httpError.cause ?? httpError, req, options);
}

/**
 * Whether an error is a failure of the server, to be logged: a 5xx, except a 503 answered on
 * purpose without a cause (maintenance, load shedding, a readiness probe saying no).
 * @internal
 */
export function isServerFailure(error: unknown): boolean {
  const httpError = toHttpError(error);
  return httpError.status >= 500 && !(httpError.status === 503 && httpError.cause === undefined);
}

/** The answer for `httpError`, made of `error` (what was thrown), already reported. */
function renderHttpError(
  httpError: HttpError,
  error: unknown,
  req: IncomingMessage,
  options: ErrorHandlerOptions,
): RenderedError {
  let problemError = httpError;
  if (httpError.status === 500 && !(error instanceof HttpError)) {
    const id = getRequestId(req);
    problemError = internalError(
      id
        ? `An unexpected error occurred. Quote request id ${id} when reporting it.`
        : 'An unexpected error occurred.',
    );
  }
  const problem = toProblem(problemError, req);
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(sendableHeaders(httpError.headers, req, options))) {
    const lower = name.toLowerCase();
    // the problem's own media type and caching win (set last, as sendError always did)
    if (lower !== 'content-type' && lower !== 'cache-control') {
      headers[name] = typeof value === 'string' ? value : [...value];
    }
  }
  headers['Content-Type'] = problemContentType(req.headers.accept);
  headers['Cache-Control'] = 'no-store';
  return { status: problem.status, headers, body: JSON.stringify(problem) };
}

/**
 * Answers with the problem for `error`: portico errors as they are, anything unexpected as
 * a 500 quoting the request id (the details go to the `logger`, never to the caller). Headers
 * already set by earlier middleware (CORS, request id, rate limits) are kept; representation
 * headers are dropped. When the headers have already gone out, the connection is ended.
 * {@link renderError} renders the same answer without writing it.
 *
 * @example
 * ```ts
 * try { await handler(req, res) } catch (err) { sendError(req, res, err) }
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9457 | RFC 9457}
 */
export function sendError(
  req: IncomingMessage,
  res: ServerResponse,
  error: unknown,
  options: ErrorHandlerOptions = {},
): void {
  const httpError = toHttpError(error);
  reportServerError(httpError, req, options);
  if (res.headersSent) {
    if (!res.writableEnded) res.destroy();
    return;
  }
  for (const name of REPRESENTATION_HEADERS) res.removeHeader(name);
  const { status, headers, body } = renderHttpError(httpError, error, req, options);
  const earlier = res.getHeader('Set-Cookie');
  send(res, status, body, { ...headers, ...withEarlierCookies(earlier, headers) });
}

/**
 * The error's headers that `setHeader` accepts. One with a CR, LF or another forbidden
 * character (a value built from input, say) would make `setHeader` throw, leaving the
 * request unanswered and the rejection unhandled: it is dropped and reported instead.
 */
function sendableHeaders(
  headers: HttpError['headers'],
  req: IncomingMessage,
  options: ErrorHandlerOptions,
): HttpError['headers'] {
  const kept: Record<string, string | readonly string[]> = {};
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined) continue;
    try {
      validateHeaderName(name);
      for (const one of typeof value === 'string' ? [value] : value) validateHeaderValue(name, one);
      kept[name] = value;
    } catch (invalid) {
      report(invalid, req, options);
    }
  }
  return kept;
}
