import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Middleware } from '../../core/compose.js';
import {
  assertKnownOptions,
  countOption,
  functionOption,
  invalidOption,
} from '../../internal/options.js';
import { type ContentCoding, negotiateEncoding } from './accept-encoding.js';

/**
 * Options of {@link compression}.
 *
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-8.4 | RFC 9110 §8.4}
 */
export interface CompressionOptions {
  /**
   * The least body size compressed, in bytes: a smaller body gains little and costs CPU. A
   * declared `Content-Length` is compared at once; a streamed body is held until this many
   * bytes (or its end, or `res.flush()`) before the choice is made.
   * @defaultValue `1024`
   */
  threshold?: number;
  /**
   * The codings offered, in order of preference when the client weighs them equally.
   * `'zstd'` is allowed only where node:zlib has Zstandard (node 22.15 and later).
   * @defaultValue `['br', 'gzip']`, then `'zstd'` where node:zlib has it
   */
  encodings?: readonly ContentCoding[];
  /**
   * Brotli quality, 0–11. The default 4 suits bodies made per request: about gzip 6's
   * speed with smaller output; 11 is for assets compressed once ahead of time.
   * @defaultValue `4`
   */
  brotliQuality?: number;
  /** gzip level, 1–9. @defaultValue `6` (zlib's own default) */
  gzipLevel?: number;
  /**
   * Called once per response, when the choice is made (headers set): `false` leaves it
   * uncompressed, and without `Vary: Accept-Encoding`. The place for a BREACH defence:
   * refuse the responses that reflect a secret (a CSRF token, a session id) in the same
   * body as text an attacker can choose (a search term, a URL parameter).
   * @defaultValue none: every eligible response is compressed
   */
  filter?: (req: IncomingMessage, res: ServerResponse) => boolean;
}

const OWNER = 'compression()';
const KNOWN = [
  'threshold',
  'encodings',
  'brotliQuality',
  'gzipLevel',
  'filter',
] as const satisfies readonly (keyof CompressionOptions)[];

import {
  CompressedResponse,
  DEFAULT_ENCODINGS,
  type Settings,
  varyOnAcceptEncoding,
} from './compressed-response.js';

function encodingsOption(value: unknown): readonly ContentCoding[] {
  if (value === undefined) return DEFAULT_ENCODINGS;
  const allowed = ['br', 'gzip', ...(DEFAULT_ENCODINGS.includes('zstd') ? ['zstd'] : [])];
  if (!Array.isArray(value) || value.some((coding) => !allowed.includes(coding))) {
    throw invalidOption(`${OWNER}: \`encodings\` must be an array of ${allowed.join(', ')}`);
  }
  return [...new Set(value as ContentCoding[])];
}

export function settingsOf(options: CompressionOptions): Settings {
  assertKnownOptions(OWNER, options, KNOWN);
  return {
    threshold: countOption(OWNER, 'threshold', options.threshold, 1024, { min: 0 }),
    encodings: encodingsOption(options.encodings),
    brotliQuality: countOption(OWNER, 'brotliQuality', options.brotliQuality, 4, {
      min: 0,
      max: 11,
    }),
    gzipLevel: countOption(OWNER, 'gzipLevel', options.gzipLevel, 6, { min: 1, max: 9 }),
    filter: functionOption(OWNER, 'filter', options.filter),
  };
}

/**
 * Compresses response bodies with Brotli or gzip (and Zstandard where node:zlib has it), as
 * the request's `Accept-Encoding` allows (see {@link negotiateEncoding}), streaming through
 * node:zlib with backpressure. A body is compressed when all of these hold: the status has a
 * body (not 1xx, 204, 304), it is not a range (206) nor a HEAD answer, it has no
 * `Content-Encoding` yet, its `Cache-Control` has no `no-transform`, its type is worth it
 * (text other than `text/event-stream`, JSON and `+json`, XML and `+xml`, JavaScript, SVG,
 * fonts…), `filter` allows it, and it is at least `threshold` bytes. It then gets
 * `Content-Encoding`, its `Content-Length` removed (chunked), or set to the compressed size
 * when the whole body came in one `end()`, and a strong `ETag` made weak (`W/"…"`): the
 * bytes differ from the identity ones, and `If-None-Match` compares weakly, so revalidation
 * still works.
 *
 * Every response of a compressible type gets `Vary: Accept-Encoding`, compressed or not (a
 * small one, a HEAD, a 304 or 206), so that caches keep the codings apart. A HEAD answer is
 * left as the identity GET's head (with its `Content-Length`): nothing is compressed for it.
 *
 * A streamed body is held until `threshold` bytes: call {@link flushResponse} (or
 * `res.flush()`, which this middleware adds) to send what was written at once, e.g. after each message of a long-lived
 * response. A client that disconnects tears the compressor down; a compressor error ends the
 * connection, never the process.
 *
 * BREACH: compressing a body that holds a secret (CSRF token, session id) next to text an
 * attacker can choose lets them guess the secret from the compressed sizes, over TLS too.
 * Compression stays on by default; keep such responses out with `filter`, or mark one with
 * `Cache-Control: no-transform`.
 *
 * @example
 * ```ts
 * const app = compose([
 *   compression({ filter: (req) => !req.url?.startsWith('/account') }), // BREACH
 *   routes,
 * ]);
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-8.4 | RFC 9110 §8.4}
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-12.5.3 | RFC 9110 §12.5.3}
 * @see {@link https://breachattack.com/ | BREACH}
 */
export function compression(options: CompressionOptions = {}): Middleware {
  const settings = settingsOf(options);
  const varyOn = varyOnAcceptEncoding(settings);
  return function compress(req, res, next) {
    const coding = negotiateEncoding(req.headers['accept-encoding'], settings.encodings);
    if (coding === undefined) varyOn(req, res);
    else new CompressedResponse(req, res, coding, settings);
    return next();
  };
}

/**
 * Sends at once what was written to a response so far, through the compressor of
 * {@link compression} (which otherwise holds a streamed body until `threshold` bytes, and
 * zlib until its buffer fills); without `compression()` on the response, its headers are
 * flushed if not sent yet. Call it after each message of a long-lived response.
 *
 * @example
 * ```ts
 * res.write(`${JSON.stringify(event)}\n`);
 * flushResponse(res);
 * ```
 */
export function flushResponse(res: ServerResponse): void {
  const flush = (res as ServerResponse & { flush?: unknown }).flush;
  if (typeof flush === 'function') flush.call(res);
  else if (!res.headersSent) res.flushHeaders();
}
