// The response wrapper of `compression()`: it decides at the first write whether to compress
// (status, headers, size), then streams the body through node:zlib with backpressure.
import type { IncomingMessage, OutgoingHttpHeader, ServerResponse } from 'node:http';
import type { Transform } from 'node:stream';
import * as zlib from 'node:zlib';
import {
  beforeHeadWrite,
  givenPairs,
  type HeadHook,
  nodeHeadersSent,
} from '../../internal/head.js';
import { appendVary } from '../../internal/headers.js';
import type { ContentCoding } from './accept-encoding.js';

/** A node:zlib compressor: a transform that can flush what it holds. */
type Compressor = Transform & { flush(callback?: () => void): void };

/** node:zlib's Zstandard, where the running node has it (node 22.15 and later). */
const zstd = zlib as unknown as {
  createZstdCompress?: () => Compressor;
  zstdCompress?: (body: Buffer, done: (err: Error | null, out: Buffer) => void) => void;
};
/** The codings this node can produce, in order of preference. */
export const DEFAULT_ENCODINGS: readonly ContentCoding[] =
  typeof zstd.createZstdCompress === 'function' ? ['br', 'gzip', 'zstd'] : ['br', 'gzip'];

/** Media types worth compressing: text (not event streams), JSON, XML, JavaScript, SVG, fonts. */
const COMPRESSIBLE =
  /^(?:text\/(?!event-stream$)[-\w.+]+|application\/(?:json|javascript|ecmascript|x-javascript|xml|x-ndjson|wasm|x-www-form-urlencoded|vnd\.ms-fontobject|[-\w.]+\+(?:json|xml))|image\/(?:svg\+xml|x-icon|vnd\.microsoft\.icon)|font\/(?:ttf|otf))$/;
const NO_TRANSFORM = /(?:^|,)\s*no-transform\s*(?:,|;|$)/i;

/** The options of `compression()`, validated. */
export interface Settings {
  threshold: number;
  encodings: readonly ContentCoding[];
  brotliQuality: number;
  gzipLevel: number;
  filter: ((req: IncomingMessage, res: ServerResponse) => boolean) | undefined;
}

/** What the response's headers allow: a `Vary: Accept-Encoding`, and compressing its body. */
interface Assessment {
  vary: boolean;
  compress: boolean;
}

function header(res: ServerResponse, name: string): string {
  const value = res.getHeader(name);
  return value === undefined ? '' : Array.isArray(value) ? value.join(', ') : String(value);
}

/**
 * Whether the response may be compressed, and varies with `Accept-Encoding`: not a body that
 * is coded already, marked `no-transform`, or of a type not worth it; not a response without
 * a body (1xx, 204, 304, HEAD) nor a range (206): those only get `Vary`.
 */
function assess(req: IncomingMessage, res: ServerResponse, settings: Settings): Assessment {
  const status = res.statusCode;
  const never = { vary: false, compress: false };
  if (status < 200 || status === 204) return never;
  const coded = header(res, 'content-encoding').trim().toLowerCase();
  if ((coded !== '' && coded !== 'identity') || NO_TRANSFORM.test(header(res, 'cache-control'))) {
    return never;
  }
  const type = header(res, 'content-type').split(';', 1)[0]!.trim().toLowerCase();
  if (!(COMPRESSIBLE.test(type) || (status === 304 && type === ''))) return never;
  if (settings.filter !== undefined && !settings.filter(req, res)) return never;
  const compress = status !== 304 && status !== 206 && req.method !== 'HEAD';
  return { vary: true, compress };
}

/** The `Content-Length` set on the response, if a valid one. */
function declaredLength(res: ServerResponse): number | undefined {
  const value = res.getHeader('content-length');
  const length = typeof value === 'number' ? value : Number(value ?? Number.NaN);
  return Number.isSafeInteger(length) && length >= 0 ? length : undefined;
}

/** Applies what `writeHead(status, reason?, headers?)` was given to the response. */
function applyHead(res: ServerResponse, status: number, args: unknown[]): void {
  res.statusCode = status;
  let headers = args[0];
  if (typeof headers === 'string') {
    res.statusMessage = headers;
    headers = args[1];
  }
  const pairs = givenPairs(headers);
  if (!Array.isArray(headers)) {
    for (const [name, value] of pairs) res.setHeader(name, value as OutgoingHttpHeader);
    return;
  }
  // what writeHead is given replaces the fields of those names (as node's writeHead does),
  // repeated names in it kept
  for (const [name] of pairs) res.removeHeader(name);
  for (const [name, value] of pairs) res.appendHeader(name, value as string);
}

/** A streaming compressor for `coding`. */
function createStream(coding: ContentCoding, settings: Settings): Compressor {
  if (coding === 'gzip') return zlib.createGzip({ level: settings.gzipLevel });
  if (coding === 'zstd') return zstd.createZstdCompress!();
  return zlib.createBrotliCompress({ params: brotliParams(settings) });
}

function brotliParams(settings: Settings, size?: number): Record<number, number> {
  const params: Record<number, number> = {
    [zlib.constants.BROTLI_PARAM_QUALITY]: settings.brotliQuality,
    [zlib.constants.BROTLI_PARAM_MODE]: zlib.constants.BROTLI_MODE_TEXT,
  };
  if (size !== undefined) params[zlib.constants.BROTLI_PARAM_SIZE_HINT] = size;
  return params;
}

/** Compresses a whole body at once (on libuv's thread pool). */
function compressWhole(
  coding: ContentCoding,
  settings: Settings,
  body: Buffer,
  done: (err: Error | null, out: Buffer) => void,
): void {
  if (coding === 'gzip') zlib.gzip(body, { level: settings.gzipLevel }, done);
  else if (coding === 'zstd') zstd.zstdCompress!(body, done);
  else zlib.brotliCompress(body, { params: brotliParams(settings, body.length) }, done);
}

type Callback = (err?: Error | null) => void;
type Mode = 'pending' | 'identity' | 'compress';
type Write = (chunk: unknown, encoding?: unknown, cb?: unknown) => boolean;

function toBuffer(chunk: unknown, encoding: unknown): Buffer {
  if (Buffer.isBuffer(chunk)) return chunk;
  if (typeof chunk === 'string') {
    return Buffer.from(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');
  }
  if (chunk instanceof Uint8Array) return Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length);
  return Buffer.alloc(0); // null or undefined (`end(null)`): no content; node rejects the rest
}

/**
 * One response under {@link compression} whose client takes `coding` (a client that takes
 * none gets {@link varyOnAcceptEncoding} instead): its `writeHead`, `write`, `end` and
 * `flushHeaders` are wrapped so that the choice (compress or not) is made once the headers
 * are final and the body's size is known or has passed the threshold; until then the head is
 * held (and `headersSent` reads `true`, as the app has committed it).
 */
export class CompressedResponse {
  private mode: Mode = 'pending';
  private committed = false;
  /** `end()` was called (the compressed body may still be on its way). */
  private ended = false;
  private held: Buffer[] = [];
  private heldSize = 0;
  private stream: Compressor | undefined;
  private ownDrain = false;
  private readonly writeHead: ServerResponse['writeHead'];
  private readonly write: Write;
  private readonly end: (chunk?: unknown, cb?: Callback) => ServerResponse;
  private readonly flushHeaders: () => void;

  constructor(
    private readonly req: IncomingMessage,
    private readonly res: ServerResponse,
    private readonly coding: ContentCoding,
    private readonly settings: Settings,
  ) {
    this.writeHead = res.writeHead;
    this.write = res.write as Write;
    this.end = res.end as CompressedResponse['end'];
    this.flushHeaders = res.flushHeaders;
    this.install();
  }

  private is(mode: Mode): boolean {
    return this.mode === mode;
  }

  private install(): void {
    const self = this;
    const res = this.res as ServerResponse & { flush?: () => void };
    res.writeHead = function writeHead(this: ServerResponse, status: number, ...args: unknown[]) {
      return self.onWriteHead(status, args);
    } as ServerResponse['writeHead'];
    res.write = ((chunk: unknown, encoding?: unknown, cb?: unknown) =>
      self.onWrite(chunk, encoding, cb)) as ServerResponse['write'];
    res.end = ((chunk?: unknown, encoding?: unknown, cb?: unknown) =>
      self.onEnd(chunk, encoding, cb)) as ServerResponse['end'];
    res.flushHeaders = () => self.onFlush(true);
    res.flush = () => self.onFlush(false);
  }

  /**
   * The head is held (the body's size, or its compressed form, is not known yet): from now
   * on `headersSent` reads `true`, as the app has committed it. Defined only then: an own
   * accessor on every response would cost each one a slower shape.
   */
  private holdHead(): void {
    const { res } = this;
    Object.defineProperty(res, 'headersSent', {
      configurable: true,
      get: () => this.committed || nodeHeadersSent.call(res),
    });
  }

  private onWriteHead(status: number, args: unknown[]): ServerResponse {
    if (!this.is('pending') || !Number.isInteger(status) || status < 200 || status > 999) {
      return (this.writeHead as (...a: unknown[]) => ServerResponse).call(
        this.res,
        status,
        ...args,
      );
    }
    applyHead(this.res, status, args);
    this.commit();
    // nothing to wait for: the head goes out now, as node would send it
    if (this.is('identity')) this.writeHead.call(this.res, this.res.statusCode);
    return this.res;
  }

  /** The head is final: decide now unless only the body's size is missing. */
  private commit(): void {
    if (this.committed) return;
    this.committed = true;
    const { vary, compress } = assess(this.req, this.res, this.settings);
    if (vary) appendVary(this.res, 'Accept-Encoding');
    const length = declaredLength(this.res);
    if (!compress) this.choose(false);
    else if (length !== undefined) this.choose(length >= this.settings.threshold);
    if (!this.is('identity')) this.holdHead();
  }

  private choose(compress: boolean): void {
    this.mode = compress ? 'compress' : 'identity';
    if (!compress) return;
    const res = this.res;
    res.setHeader('Content-Encoding', this.coding);
    res.removeHeader('Content-Length');
    const etag = res.getHeader('ETag');
    if (typeof etag === 'string' && etag.startsWith('"')) res.setHeader('ETag', `W/${etag}`);
  }

  private onWrite(chunk: unknown, encoding: unknown, cb: unknown): boolean {
    if (this.is('pending')) this.commit();
    if (this.is('identity') || this.res.writableEnded) {
      return this.write.call(this.res, chunk, encoding, cb);
    }
    if (typeof encoding === 'function') [cb, encoding] = [encoding, undefined];
    const callback = typeof cb === 'function' ? (cb as Callback) : undefined;
    if (this.ended) {
      if (callback) process.nextTick(callback, new Error('write after end'));
      return false;
    }
    const buffer = toBuffer(chunk, encoding);
    return this.is('pending') ? this.hold(buffer, callback) : this.compress(buffer, callback);
  }

  /** Holds a chunk of a body of unknown size until the threshold is reached. */
  private hold(chunk: Buffer, cb: Callback | undefined): boolean {
    this.held.push(chunk);
    this.heldSize += chunk.length;
    if (this.heldSize < this.settings.threshold) {
      if (cb) process.nextTick(cb);
      return true;
    }
    this.choose(true);
    return this.compress(Buffer.alloc(0), cb);
  }

  /** Writes to the compressor (opened at the first write, with the chunks held so far). */
  private compress(chunk: Buffer, cb: Callback | undefined): boolean {
    const stream = this.stream ?? this.open();
    if (stream.destroyed) return false; // the client has gone: nothing more is sent
    return stream.write(chunk, cb);
  }

  private open(): Compressor {
    const stream = createStream(this.coding, this.settings);
    this.stream = stream;
    const res = this.res;
    stream.on('data', (out: Buffer) => {
      if (!this.write.call(res, out)) stream.pause();
    });
    stream.on('drain', () => {
      this.ownDrain = true;
      res.emit('drain'); // the app waits for it when `write` returned false
      this.ownDrain = false;
    });
    res.on('drain', () => {
      if (!this.ownDrain) stream.resume();
    });
    stream.on('error', () => res.destroy()); // never thrown: the answer is cut short
    res.once('close', () => stream.destroy()); // finished, or the client has gone
    for (const held of this.held) stream.write(held);
    this.held = [];
    return stream;
  }

  private onEnd(chunk: unknown, encoding: unknown, cb: unknown): ServerResponse {
    if (this.is('pending')) this.commit();
    if (this.is('identity') || this.res.writableEnded || this.ended) {
      return (this.end as (...a: unknown[]) => ServerResponse).call(this.res, chunk, encoding, cb);
    }
    this.ended = true;
    if (typeof chunk === 'function') [cb, chunk] = [chunk, undefined];
    if (typeof encoding === 'function') [cb, encoding] = [encoding, undefined];
    const callback = typeof cb === 'function' ? (cb as Callback) : undefined;
    const last = toBuffer(chunk, encoding);
    if (this.is('pending')) this.choose(this.heldSize + last.length >= this.settings.threshold);
    if (this.stream !== undefined) {
      if (callback) this.res.once('finish', callback);
      this.stream.on('end', () => this.end.call(this.res));
      this.stream.end(last);
      return this.res;
    }
    const body = this.held.length === 0 ? last : Buffer.concat([...this.held, last]);
    this.held = [];
    if (this.is('identity')) return this.end.call(this.res, body, callback);
    this.finishWhole(body, callback);
    return this.res;
  }

  /** The whole body is known: compressed in one piece, with its exact `Content-Length`. */
  private finishWhole(body: Buffer, cb: Callback | undefined): void {
    compressWhole(this.coding, this.settings, body, (err, out) => {
      if (this.res.destroyed) return;
      if (err) this.res.removeHeader('Content-Encoding'); // sent as it is rather than lost
      const sent = err ? body : out;
      this.res.setHeader('Content-Length', sent.length);
      this.end.call(this.res, sent, cb);
    });
  }

  /** `flushHeaders()` (`headersOnly`) or `flush()`: a streamed response is not held back. */
  private onFlush(headersOnly: boolean): void {
    if (this.is('pending')) {
      this.commit();
      if (this.is('pending')) this.choose(true);
    }
    if (this.ended) return;
    if (this.is('compress')) {
      const stream = this.stream ?? this.open();
      if (!headersOnly && !stream.destroyed) stream.flush();
    }
    if (headersOnly || !nodeHeadersSent.call(this.res)) this.flushHeaders.call(this.res);
  }
}

/**
 * For the responses under `compression()` whose client takes none of the codings offered:
 * their body is sent as it is, and only `Vary: Accept-Encoding` is added, just before the head
 * is written (node writes it for an implicit head too), to a response that another client
 * would have got compressed, so that caches keep the two apart. Made once per middleware: the
 * response's head runs the shared hook; a response without one (portico not first on it) gets
 * its `writeHead` wrapped.
 */
export function varyOnAcceptEncoding(
  settings: Settings,
): (req: IncomingMessage, res: ServerResponse) => void {
  const vary: HeadHook = (res) => {
    if (assess(res.req, res, settings).vary) appendVary(res, 'Accept-Encoding');
  };
  return (_req, res) => {
    if (beforeHeadWrite(res, vary)) return;
    const writeHead = res.writeHead as (...args: unknown[]) => ServerResponse;
    res.writeHead = function varyingWriteHead(status: number, ...args: unknown[]) {
      if (nodeHeadersSent.call(res) || !Number.isInteger(status) || status < 200 || status > 999) {
        return writeHead.call(res, status, ...args);
      }
      applyHead(res, status, args);
      vary(res);
      return writeHead.call(res, res.statusCode);
    } as ServerResponse['writeHead'];
  };
}
