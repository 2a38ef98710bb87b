import type { IncomingMessage } from 'node:http';
import contentType from 'content-type';
import getRawBody from 'raw-body';
import {
  bodyAborted,
  bodyLengthMismatch,
  bodyTooLarge,
  invalidJson,
  unsupportedCharset,
  unsupportedContentEncoding,
} from '../../core/errors/body.js';
import {
  badRequest,
  HttpError,
  internalError,
  unsupportedMediaType,
} from '../../core/errors/errors.js';
import { countFieldLines } from '../../internal/headers.js';
import type { StandardSchemaV1 } from './standard-schema.js';
import { assertStandardSchema, validate } from './validate.js';

/** Options shared by the body readers. */
export interface BodyOptions {
  /**
   * Largest body accepted, in bytes. Checked against `Content-Length` before reading and
   * again while streaming; over it the reader throws a 413 problem.
   * @defaultValue `1048576` (1 MiB)
   */
  limit?: number;
  /**
   * Media types accepted (exact `type/subtype`, or a `+suffix` such as `+json`). Anything
   * else, or no `Content-Type` at all, is a 415 problem.
   * @defaultValue per reader: JSON takes `application/json` and `+json`, form takes
   * `application/x-www-form-urlencoded`, text takes `text/plain`
   */
  types?: readonly string[];
}

/**
 * Default body limit: 1 MiB.
 *
 * @example
 * ```ts
 * const upload = await readBody(req, { limit: 4 * DEFAULT_BODY_LIMIT }); // up to 4 MiB
 * ```
 */
export const DEFAULT_BODY_LIMIT = 1024 * 1024;

const kBody = Symbol('portico.body');
const kWithheld = Symbol('portico.bodyWithheld');
type WithBody = IncomingMessage & { [kBody]?: Promise<Buffer>; [kWithheld]?: true };

/**
 * Marks a request whose client waits for a `100 Continue` it will not get: its body never
 * comes, so a refusal does not wait to drop it. (createCheckContinueHandler)
 */
export function markBodyWithheld(req: IncomingMessage): void {
  (req as WithBody)[kWithheld] = true;
}

const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/** Resolves once the rest of the request has been read and dropped, or after a short wait. */
function drain(req: IncomingMessage): Promise<void> {
  if (req.readableEnded || req.destroyed || (req as WithBody)[kWithheld]) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(finish, 2000);
    function finish() {
      clearTimeout(timer);
      req.off('end', finish);
      req.off('close', finish);
      req.off('error', finish);
      resolve();
    }
    req.on('end', finish);
    req.on('close', finish);
    req.on('error', finish);
    req.resume();
  });
}

/**
 * Refuses a body with a content coding (`Content-Encoding` other than `identity`): the
 * readers do not decode one, and reading it as it is would take the coded bytes for the
 * content. A 415 with `Accept-Encoding: identity`, as RFC 7694 §3 asks.
 */
function assertIdentityCoding(req: IncomingMessage): void {
  const header = req.headers['content-encoding'];
  if (header === undefined) return;
  for (const coding of header.split(',')) {
    const name = coding.trim().toLowerCase();
    if (name !== '' && name !== 'identity') throw unsupportedContentEncoding();
  }
}

/**
 * Reads the raw request body once, within `limit` bytes; every later call for the same
 * request returns the same bytes. A body with a content coding other than `identity`
 * (`Content-Encoding: gzip`) is a 415 problem with `Accept-Encoding: identity`, before a
 * byte of it is read: the bytes are never decoded, so they would not be the content.
 *
 * @example
 * ```ts
 * const bytes = await readBody(req, { limit: 64 * 1024 });
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-15.5.14 | RFC 9110 §15.5.14}
 * @see {@link https://www.rfc-editor.org/rfc/rfc7694#section-3 | RFC 7694 §3}
 */
export function readBody(req: IncomingMessage, options: { limit?: number } = {}): Promise<Buffer> {
  const holder = req as WithBody;
  const cached = holder[kBody];
  if (cached !== undefined) return cached;
  const limit = options.limit ?? DEFAULT_BODY_LIMIT;
  const promise = readOnce(req, limit);
  Object.defineProperty(holder, kBody, { value: promise, enumerable: false });
  return promise;
}

async function readOnce(req: IncomingMessage, limit: number): Promise<Buffer> {
  if (req.readableEnded || req.readableDidRead) {
    throw internalError(undefined, {
      code: 'ERR_BODY_CONSUMED',
      cause: new Error('The request body was already read by another body parser.'),
    });
  }
  assertIdentityCoding(req);
  const declared = req.headers['content-length'];
  try {
    return await getRawBody(req, {
      limit,
      length:
        declared !== undefined && req.headers['transfer-encoding'] === undefined
          ? declared
          : undefined,
    });
  } catch (err) {
    const type = (err as { type?: string }).type;
    if (type === 'entity.too.large') {
      await drain(req);
      throw bodyTooLarge(limit, req.readableEnded ? {} : { Connection: 'close' });
    }
    if (type === 'request.size.invalid') throw bodyLengthMismatch();
    if (type === 'request.aborted') throw bodyAborted();
    throw badRequest('The request body could not be read.', { code: 'ERR_BODY_READ', cause: err });
  }
}

function matchesType(type: string, accepted: readonly string[]): boolean {
  for (const a of accepted) {
    if (a === type) return true;
    if (a.startsWith('+') && type.endsWith(a)) return true;
  }
  return false;
}

/**
 * Refuses two `Content-Type` lines: node keeps the first and drops the others, so the body
 * would be read by a type its sender may not have meant (RFC 9110 §5.3, a singleton field).
 */
function assertOneContentType(req: IncomingMessage): void {
  if (countFieldLines(req.rawHeaders, 'content-type') > 1) {
    throw badRequest('Content-Type must be sent once.', { code: 'ERR_CONTENT_TYPE_REPEATED' });
  }
}

/** Checks the media type and charset, then reads and decodes the body as UTF-8 text. */
async function readTyped(
  req: IncomingMessage,
  options: BodyOptions,
  defaults: readonly string[],
  what: string,
): Promise<string> {
  const accepted = options.types ?? defaults;
  assertOneContentType(req);
  const header = req.headers['content-type'];
  let parsed: contentType.ParsedMediaType;
  try {
    if (header === undefined) throw new Error('missing');
    parsed = contentType.parse(header);
  } catch {
    throw unsupportedMediaType(
      `The request body must be ${what} (Content-Type ${accepted.filter((t) => !t.startsWith('+')).join(' or ')}).`,
    );
  }
  if (!matchesType(parsed.type, accepted)) {
    throw unsupportedMediaType(`Content-Type ${parsed.type} is not accepted here; send ${what}.`);
  }
  const charset = parsed.parameters.charset?.toLowerCase();
  if (
    charset !== undefined &&
    charset !== 'utf-8' &&
    charset !== 'utf8' &&
    charset !== 'us-ascii'
  ) {
    throw unsupportedCharset(charset);
  }
  const bytes = await readBody(req, options);
  try {
    return decoder.decode(bytes);
  } catch {
    throw badRequest('The request body is not valid UTF-8.', { code: 'ERR_INVALID_ENCODING' });
  }
}

const JSON_TYPES = ['application/json', '+json'] as const;
const FORM_TYPES = ['application/x-www-form-urlencoded'] as const;
const TEXT_TYPES = ['text/plain'] as const;

/** Texts that may hold a dangerous key: the names themselves, or any `\u` escape (`"\u005f_proto__"`). */
const POISON = /__proto__|constructor|prototype|\\u/;

const POISON_KEYS = ['__proto__', 'constructor', 'prototype'] as const;

/**
 * Deletes the keys `__proto__`, `constructor` and `prototype` at every depth, in place. A
 * loop, not a `JSON.parse` reviver: the reviver recurses and overflows the stack on valid
 * JSON nested a few thousand levels deep, which would then be refused as invalid.
 */
function dropPoisonKeys(root: unknown): unknown {
  const pending: unknown[] = [root];
  while (pending.length > 0) {
    const value = pending.pop();
    if (typeof value !== 'object' || value === null) continue;
    if (Array.isArray(value)) {
      for (const item of value) pending.push(item);
      continue;
    }
    const record = value as Record<string, unknown>;
    for (const key of POISON_KEYS) if (Object.hasOwn(record, key)) delete record[key];
    for (const key of Object.keys(record)) pending.push(record[key]);
  }
  return root;
}

/** Options of {@link readJson}. */
export interface ReadJsonOptions<S extends StandardSchemaV1 = StandardSchemaV1>
  extends BodyOptions {
  /**
   * A Standard Schema (zod 3.24+, valibot 1, arktype…) the parsed body must pass: the reader
   * then resolves to the schema's output, and a body that fails is a 422 problem whose
   * `errors` name each field by JSON Pointer (see {@link validate}).
   * @defaultValue none: the parsed JSON is returned as it is
   */
  schema?: S;
}

/**
 * Reads a JSON body (`application/json` or a `+json` type). 415 for another media type,
 * charset or a content coding (`Content-Encoding` other than `identity`), 413 over the
 * limit, 400 for invalid JSON (saying where it broke) or invalid UTF-8. Keys `__proto__`,
 * `constructor` and `prototype` are dropped, so they never reach the caller's object.
 * Reading twice returns equal values. With `schema`, the body is then validated and the
 * schema's output returned, typed; a body that fails is a 422 problem with `errors:
 * [{ field, message }]`, and a `schema` that is not a Standard Schema throws a `TypeError`
 * before the body is read.
 *
 * @example
 * ```ts
 * import { z } from 'zod';
 *
 * const body = await readJson<{ text?: unknown }>(req);
 * const message = await readJson(req, { schema: z.object({ text: z.string().min(1) }) });
 * message.text; // string
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc8259 | RFC 8259}
 * @see {@link https://standardschema.dev | Standard Schema}
 */
export function readJson<S extends StandardSchemaV1>(
  req: IncomingMessage,
  options: ReadJsonOptions<S> & { schema: S },
): Promise<StandardSchemaV1.InferOutput<S>>;
export function readJson<T = unknown>(req: IncomingMessage, options?: BodyOptions): Promise<T>;
export function readJson(req: IncomingMessage, options: ReadJsonOptions = {}): Promise<unknown> {
  const { schema } = options;
  if (schema === undefined) return parseJson(req, options);
  assertStandardSchema('readJson()', 'schema', schema);
  return parseJson(req, options).then((value) => validate(schema, value));
}

async function parseJson(req: IncomingMessage, options: BodyOptions): Promise<unknown> {
  const text = await readTyped(req, options, JSON_TYPES, 'JSON');
  try {
    const value: unknown = JSON.parse(text);
    return POISON.test(text) ? dropPoisonKeys(value) : value;
  } catch (err) {
    if (err instanceof HttpError) throw err;
    throw invalidJson(text, err);
  }
}

/**
 * Reads an `application/x-www-form-urlencoded` body as `URLSearchParams` (repeated
 * parameters stay visible, as OAuth needs). 415 for another media type, charset or a content
 * coding, 413 over the limit, 400 for invalid UTF-8.
 *
 * @example
 * ```ts
 * const form = await readForm(req);
 * form.get('grant_type');
 * ```
 * @see {@link https://url.spec.whatwg.org/#application/x-www-form-urlencoded | URL Standard: application/x-www-form-urlencoded}
 */
export function readForm(
  req: IncomingMessage,
  options: BodyOptions = {},
): Promise<URLSearchParams> {
  return readTyped(req, options, FORM_TYPES, 'a form').then(toSearchParams);
}

const toSearchParams = (text: string) => new URLSearchParams(text);

/**
 * Reads a `text/plain` body as a string. 415 for another media type, charset or a content
 * coding, 413 over the limit, 400 for invalid UTF-8.
 *
 * @example
 * ```ts
 * const note = await readText(req, { limit: 4096 });
 * ```
 */
export function readText(req: IncomingMessage, options: BodyOptions = {}): Promise<string> {
  return readTyped(req, options, TEXT_TYPES, 'plain text');
}
