/**
 * What a framework's own body parser refused, as the problem portico's readers give for the
 * same mistake: Express's `express.json()` and the other body-parser middleware (4 and 5),
 * Fastify's content-type parsers (4 and 5). The framework's message never reaches the caller.
 *
 * @internal
 * @module
 */
import {
  bodyAborted,
  bodyLengthMismatch,
  bodyTooLarge,
  invalidJson,
  notJsonObject,
  unsupportedCharset,
  unsupportedContentEncoding,
} from './body.js';
import { type HttpError, unsupportedMediaType } from './errors.js';

/** The members of a body-parser (raw-body, http-errors) or Fastify error portico reads. */
interface ParserErrorLike {
  type?: unknown;
  code?: unknown;
  body?: unknown;
  limit?: unknown;
  charset?: unknown;
  message?: unknown;
}

const isSyntaxError = (error: object): boolean =>
  error instanceof SyntaxError || (error as { name?: unknown }).name === 'SyntaxError';

/** Whether `text` is JSON after all: refused by a strict parser (`express.json()`) for its kind. */
function parses(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** A parse failure of JSON: located in the body when the error carries it (body-parser, co-body). */
function jsonParseFailure(error: object, body: unknown): HttpError {
  if (typeof body !== 'string') return invalidJson(undefined, error, error);
  return parses(body) ? notJsonObject(error) : invalidJson(body, error, error);
}

/** body-parser's errors, told by their `type` (raw-body's and its own). */
function fromBodyParser(error: ParserErrorLike & object): HttpError | undefined {
  switch (error.type) {
    case 'entity.parse.failed':
      return isSyntaxError(error) ? jsonParseFailure(error, error.body) : undefined;
    case 'entity.too.large':
      return bodyTooLarge(typeof error.limit === 'number' ? error.limit : undefined, {}, error);
    case 'request.size.invalid':
      return bodyLengthMismatch(error);
    case 'request.aborted':
      return bodyAborted(error);
    case 'charset.unsupported':
      return unsupportedCharset(
        typeof error.charset === 'string' ? error.charset : undefined,
        error,
      );
    case 'encoding.unsupported':
      return unsupportedContentEncoding(error);
    default:
      return undefined;
  }
}

/** Fastify's content-type parser errors, told by their `code`. */
function fromFastify(error: ParserErrorLike & object): HttpError | undefined {
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON':
      return invalidJson(undefined, undefined, error);
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return invalidJson('', new SyntaxError('Unexpected end of JSON input'), error);
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return bodyTooLarge(undefined, {}, error);
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return bodyLengthMismatch(error);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return unsupportedMediaType('The Content-Type of the request body is not accepted here.', {
        cause: error,
      });
    default:
      return undefined;
  }
}

/** The status an error carries (`status`, else `statusCode`), if any. */
function statusOf(error: object): unknown {
  const e = error as { status?: unknown; statusCode?: unknown };
  return e.status ?? e.statusCode;
}

/**
 * The problem portico gives for what a framework's body parser refused, or `undefined` for
 * any other error: invalid JSON is `urn:portico:problem:invalid-json` (located by line and
 * column when the error holds the text, as body-parser's does), a body over the limit a 413,
 * a charset or content coding not taken a 415, as `readJson` answers on node:http.
 *
 * @internal
 */
export function fromFrameworkBodyError(error: unknown): HttpError | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const e = error as ParserErrorLike;
  const status = statusOf(error);
  if (typeof status !== 'number' || status < 400 || status > 599) return undefined;
  if (typeof e.type === 'string') {
    const mapped = fromBodyParser(e);
    if (mapped !== undefined) return mapped;
  }
  if (typeof e.code === 'string' && e.code.startsWith('FST_ERR_CTP_')) return fromFastify(e);
  // a JSON.parse failure given a 400 by its parser (Fastify 4, co-body)
  if (status === 400 && isSyntaxError(error) && /JSON/.test(String(e.message))) {
    return jsonParseFailure(error, e.body);
  }
  return undefined;
}
