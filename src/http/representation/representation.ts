// Sending a representation with byte ranges (RFC 9110 §14): conditional requests first, then
// `If-Range`, then one range (206), several (206 multipart/byteranges), none that can be
// satisfied (416) or the whole (200).
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { HttpError } from '../../core/errors/errors.js';
import { checkConditional, compareETags, isETag, parseHttpDate } from './conditional.js';
import { type ByteRange, formatContentRange, type ParseRangeOptions, parseRange } from './range.js';

/**
 * A representation read by ranges, such as a file: its `size` in bytes, and a `stream` of
 * the bytes from `start` to `end`, both inclusive (as `fs.createReadStream` takes them).
 *
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-14 | RFC 9110 §14}
 */
export interface RangeSource {
  /** Its length in bytes. */
  size: number;
  /** A stream of bytes `start` to `end`, both inclusive. */
  stream(start: number, end: number): Readable;
}

/**
 * Options of {@link sendRepresentation}.
 *
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-14 | RFC 9110 §14}
 */
export interface SendRepresentationOptions {
  /** Its media type, e.g. `text/plain; charset=utf-8`, sent whole and in each part. */
  contentType: string;
  /** Its entity tag (`"…"` or `W/"…"`); only a strong one lets `If-Range` match. @defaultValue none */
  etag?: string;
  /**
   * When it last changed (a `Date`, or epoch milliseconds), compared at the precision of an
   * HTTP date. @defaultValue none
   */
  lastModified?: Date | number;
  /** Further headers of the answer (`Cache-Control`…), set first. @defaultValue none */
  headers?: OutgoingHttpHeaders;
  /** The limits on the `Range` field. @defaultValue those of {@link ParseRangeOptions} */
  range?: ParseRangeOptions;
}

type Piece = Buffer | ByteRange;

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

/** `If-Range` (RFC 9110 §13.1.5): a strong entity tag equal to ours, or our exact date. */
function ifRangeHolds(req: IncomingMessage, options: SendRepresentationOptions): boolean {
  const value = header(req, 'if-range')?.trim();
  if (value === undefined) return true;
  if (value.startsWith('"') || value.startsWith('W/')) {
    return (
      options.etag !== undefined && isETag(value) && compareETags(value, options.etag, 'strong')
    );
  }
  const date = parseHttpDate(value);
  if (date === undefined || options.lastModified === undefined) return false;
  return Math.floor(date / 1000) === Math.floor(new Date(options.lastModified).getTime() / 1000);
}

function rangeNotSatisfiable(size: number): HttpError {
  return new HttpError(
    416,
    `No requested range overlaps the ${size} bytes of the representation.`,
    {
      code: 'ERR_RANGE_NOT_SATISFIABLE',
      headers: { 'Content-Range': formatContentRange(size) },
    },
  );
}

/** The pieces of a multipart/byteranges body (RFC 9110 §14.6), and its length. */
function multipart(ranges: readonly ByteRange[], size: number, contentType: string) {
  const boundary = `portico-${randomBytes(12).toString('hex')}`;
  const pieces: Piece[] = [];
  let length = 0;
  ranges.forEach((range, i) => {
    const head = `${i === 0 ? '' : '\r\n'}--${boundary}\r\nContent-Type: ${contentType}\r\nContent-Range: ${formatContentRange(size, range)}\r\n\r\n`;
    const bytes = Buffer.from(head, 'latin1');
    pieces.push(bytes, range);
    length += bytes.length + range.end - range.start + 1;
  });
  const close = Buffer.from(`\r\n--${boundary}--\r\n`, 'latin1');
  pieces.push(close);
  return { boundary, pieces, length: length + close.length };
}

/** Streams one range into `res` without ending it; `false` when the client went away. */
async function pipeRange(source: RangeSource, range: ByteRange, res: ServerResponse) {
  try {
    await pipeline(source.stream(range.start, range.end), res, { end: false });
    return true;
  } catch (err) {
    if (res.destroyed && !res.writableFinished) return false;
    throw err;
  }
}

async function write(res: ServerResponse, source: RangeSource | Buffer, pieces: readonly Piece[]) {
  if (Buffer.isBuffer(source)) {
    const chunks = pieces.map((p) =>
      Buffer.isBuffer(p) ? p : source.subarray(p.start, p.end + 1),
    );
    res.end(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks));
    return;
  }
  for (const piece of pieces) {
    if (res.destroyed) return;
    if (Buffer.isBuffer(piece)) res.write(piece);
    else if (!(await pipeRange(source, piece, res))) return;
  }
  res.end();
}

/** Writes status, `Content-Length` and (but for HEAD) the pieces. */
async function answer(
  req: IncomingMessage,
  res: ServerResponse,
  status: number,
  length: number,
  source: RangeSource | Buffer,
  pieces: readonly Piece[],
): Promise<void> {
  res.statusCode = status;
  res.setHeader('Content-Length', length);
  if (req.method === 'HEAD' || length === 0) {
    res.end();
    return;
  }
  await write(res, source, pieces);
}

/**
 * Answers with a representation, whole or by ranges (RFC 9110 §14): sets `Accept-Ranges:
 * bytes` and the given headers, evaluates the preconditions first (`checkConditional`: 304,
 * or a 412 problem), then, for a GET whose `If-Range` holds (a strong entity tag equal to
 * `etag`, or exactly `lastModified`), the `Range` field ({@link parseRange}): one range is a
 * 206 with `Content-Range`, several a 206 `multipart/byteranges` (unless that body would be
 * no smaller than the whole, then a 200), none satisfiable a 416 problem with `Content-Range:
 * bytes *\/size`. Anything else is a 200 with the whole. HEAD gets the headers of the GET
 * without `Range` (ranges are defined for GET only, §14.2). Resolves once written; a client
 * that goes away mid-stream ends it quietly.
 *
 * @example
 * ```ts
 * const data = await readFile('report.pdf');
 * await sendRepresentation(req, res, data, { contentType: 'application/pdf', etag: createETag(data) });
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-14 | RFC 9110 §14}
 */
export async function sendRepresentation(
  req: IncomingMessage,
  res: ServerResponse,
  body: Buffer | string | RangeSource,
  options: SendRepresentationOptions,
): Promise<void> {
  const source = typeof body === 'string' ? Buffer.from(body) : body;
  const size = Buffer.isBuffer(source) ? source.length : source.size;
  res.setHeader('Accept-Ranges', 'bytes');
  for (const [name, value] of Object.entries(options.headers ?? {})) {
    if (value !== undefined) res.setHeader(name, value);
  }
  res.setHeader('Content-Type', options.contentType);
  const { etag, lastModified } = options;
  if (checkConditional(req, res, { etag, lastModified })) return;
  const verdict =
    req.method === 'GET' && ifRangeHolds(req, options)
      ? parseRange(header(req, 'range'), size, options.range)
      : ({ type: 'none' } as const);
  if (verdict.type === 'unsatisfiable') throw rangeNotSatisfiable(size);
  const whole: ByteRange = { start: 0, end: size - 1 };
  if (verdict.type !== 'ranges') return answer(req, res, 200, size, source, [whole]);
  const [first] = verdict.ranges;
  if (verdict.ranges.length === 1 && first !== undefined) {
    res.setHeader('Content-Range', formatContentRange(size, first));
    return answer(req, res, 206, first.end - first.start + 1, source, [first]);
  }
  const parts = multipart(verdict.ranges, size, options.contentType);
  if (parts.length >= size) return answer(req, res, 200, size, source, [whole]);
  res.setHeader('Content-Type', `multipart/byteranges; boundary=${parts.boundary}`);
  return answer(req, res, 206, parts.length, source, parts.pieces);
}
