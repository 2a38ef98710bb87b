/**
 * The problems a request body is refused with, made in one place: portico's body readers
 * (`readJson`, `readBody`…) throw them, and `toHttpError` gives the same ones for what a
 * framework's own body parser refused (`express.json()`, Fastify's), so that one mistake is
 * one problem on every host.
 *
 * @internal
 * @module
 */
import { badRequest, contentTooLarge, type HttpError, unsupportedMediaType } from './errors.js';

const NOT_JSON = 'The request body is not valid JSON';

/**
 * Where a `JSON.parse` of `text` stopped, as line and column, without quoting the input back.
 * Without the text, the position the message gives (and its line and column, where node
 * gives them) is all there is.
 */
function describeJsonError(text: string | undefined, err: unknown): string {
  const message = err instanceof Error ? err.message : '';
  if (/Unexpected end of JSON input/.test(message)) return `${NOT_JSON}: it ends too early.`;
  const at = /at position (\d+)/.exec(message);
  if (!at) {
    const token = /^Unexpected token '(.)'/.exec(message);
    return token ? `${NOT_JSON}: unexpected character '${token[1]}'.` : `${NOT_JSON}.`;
  }
  const position = Number(at[1]);
  if (text === undefined) {
    const where = /\(line (\d+) column (\d+)\)/.exec(message);
    return where
      ? `${NOT_JSON}: syntax error at line ${where[1]}, column ${where[2]} (position ${position}).`
      : `${NOT_JSON}: syntax error at position ${position}.`;
  }
  const before = text.slice(0, position);
  const line = before.split('\n').length;
  const column = position - before.lastIndexOf('\n');
  return `${NOT_JSON}: syntax error at line ${line}, column ${column} (position ${position}).`;
}

/**
 * 400 `urn:portico:problem:invalid-json`: `text` (when known) did not parse, `err` being what
 * `JSON.parse` threw. The detail says where it broke, never what the body held.
 *
 * @internal
 */
export function invalidJson(text: string | undefined, err: unknown, cause?: unknown): HttpError {
  return badRequest(describeJsonError(text, err), {
    code: 'ERR_INVALID_JSON',
    typeSlug: 'invalid-json',
    cause,
  });
}

/**
 * 400 `urn:portico:problem:invalid-json` for a body that is JSON, but not the object or array
 * a strict parser (`express.json()`'s default) takes.
 *
 * @internal
 */
export function notJsonObject(cause?: unknown): HttpError {
  return badRequest(`${NOT_JSON} here: send an object or an array.`, {
    code: 'ERR_INVALID_JSON',
    typeSlug: 'invalid-json',
    cause,
  });
}

/**
 * 413: the body is larger than `limit` bytes (when known).
 *
 * @internal
 */
export function bodyTooLarge(
  limit: number | undefined,
  headers: Record<string, string> = {},
  cause?: unknown,
): HttpError {
  return contentTooLarge(
    limit === undefined
      ? 'The request body is larger than the limit.'
      : `The request body is larger than the limit of ${limit} bytes.`,
    { headers, cause },
  );
}

/**
 * 400: the body is shorter or longer than its `Content-Length`.
 *
 * @internal
 */
export function bodyLengthMismatch(cause?: unknown): HttpError {
  return badRequest('The request body is shorter or longer than its Content-Length.', {
    code: 'ERR_BODY_LENGTH',
    cause,
  });
}

/**
 * 400: the body was cut off before its end.
 *
 * @internal
 */
export function bodyAborted(cause?: unknown): HttpError {
  return badRequest('The request body was cut off before its end.', {
    code: 'ERR_BODY_ABORTED',
    cause,
  });
}

/**
 * 415: a `charset` other than UTF-8. A charset that is not a plain token is not quoted back.
 *
 * @internal
 */
export function unsupportedCharset(charset: string | undefined, cause?: unknown): HttpError {
  const named = charset !== undefined && /^[\w.:+-]{1,40}$/.test(charset);
  return unsupportedMediaType(
    named
      ? `The charset ${charset} is not supported; send UTF-8.`
      : 'The charset is not supported; send UTF-8.',
    { code: 'ERR_UNSUPPORTED_CHARSET', cause },
  );
}

/**
 * 415 with `Accept-Encoding: identity`: a content coding the reader does not take (RFC 7694 §3).
 *
 * @internal
 */
export function unsupportedContentEncoding(cause?: unknown): HttpError {
  return unsupportedMediaType(
    'Content-Encoding is not accepted here: send the request body unencoded (identity).',
    {
      code: 'ERR_UNSUPPORTED_CONTENT_ENCODING',
      headers: { 'Accept-Encoding': 'identity' },
      cause,
    },
  );
}
