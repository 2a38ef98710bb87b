import { type IncomingMessage, ServerResponse } from 'node:http';

/** The head fields node writes for its own connection, which a Web `Response` does not carry. */
export const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding']);

/** The statuses whose `Response` has no body (Fetch, "null body status"). */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/** The bytes queued for the reader before `write()` answers `false` (then `'drain'`). */
const HIGH_WATER_MARK = 64 * 1024;

/** What node's `ServerResponse` keeps and this one reads: the head as written, and whether a body goes with it. */
interface NodeOutgoing {
  _header: string | null;
  _hasBody: boolean;
}

/**
 * A real `ServerResponse` whose answer becomes a Web `Response` ({@link response}): the head
 * exactly as node wrote it (its `Content-Length`, `Date`, header validation, `HEAD`/`204`/`304`
 * without a body), the body as a stream that the reader pulls, with `write()` answering
 * `false` and `'drain'` following as on a socket. `headersSent`, `getHeader()`, `writeHead()`
 * keep node's meaning, since node's own code runs them.
 * @internal
 */
export class FetchServerResponse extends ServerResponse {
  /** The answer, once its head is written (rejected if the response is destroyed first). */
  readonly response: Promise<Response>;
  #resolve!: (response: Response) => void;
  #reject!: (error: Error) => void;
  #started = false;
  #controller: ReadableStreamDefaultController<Uint8Array> | undefined;
  #closed = false;
  #needDrain = false;
  readonly #onCancel: () => void;

  /** `onCancel` runs when the reader of the body goes away before its end (the client left). */
  constructor(req: IncomingMessage, onCancel: () => void) {
    super(req);
    this.#onCancel = onCancel;
    this.response = new Promise<Response>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    // a handler that never reads it must not make the rejection unhandled
    this.response.catch(() => {});
    this.assignSocket(req.socket as never);
  }

  override writeHead(...args: unknown[]): this {
    (ServerResponse.prototype.writeHead as (...a: unknown[]) => unknown).apply(this, args);
    if ((this as unknown as NodeOutgoing)._header) this.#start();
    return this;
  }

  override write(...args: unknown[]): boolean {
    if (this.writableEnded || this.destroyed) {
      return (ServerResponse.prototype.write as (...a: unknown[]) => boolean).apply(this, args);
    }
    (ServerResponse.prototype.write as (...a: unknown[]) => boolean).apply(this, args);
    this.#enqueue(args[0], typeof args[1] === 'string' ? (args[1] as BufferEncoding) : undefined);
    if (this.#controller === undefined || (this.#controller.desiredSize ?? 1) > 0) return true;
    this.#needDrain = true;
    return false;
  }

  override end(...args: unknown[]): this {
    const ending = !this.writableEnded && !this.destroyed;
    (ServerResponse.prototype.end as (...a: unknown[]) => unknown).apply(this, args);
    if (!ending) return this;
    const chunk = typeof args[0] === 'function' ? undefined : args[0];
    this.#start();
    if (chunk !== undefined && chunk !== null) {
      this.#enqueue(chunk, typeof args[1] === 'string' ? (args[1] as BufferEncoding) : undefined);
    }
    this.#close();
    return this;
  }

  override destroy(error?: Error): this {
    super.destroy(error);
    const reason = error ?? new Error('The response was destroyed before its end.');
    if (!this.#started) this.#reject(reason);
    else if (this.#controller !== undefined && !this.#closed) {
      this.#closed = true;
      // cut short: the host must not take what was written for a whole answer
      this.#controller.error(reason);
    }
    return this;
  }

  /**
   * The client went away (the request's `signal` aborted): the response is destroyed, and its
   * body ends quietly, since nobody reads it any more (the host would report an error).
   */
  clientGone(): void {
    if (this.#controller !== undefined && !this.#closed) {
      this.#closed = true;
      this.#controller.close();
    }
    this.destroy();
  }

  /** Makes the `Response` from the head node wrote, once. */
  #start(): void {
    if (this.#started) return;
    this.#started = true;
    const outgoing = this as unknown as NodeOutgoing;
    const headers = headersOf(outgoing._header ?? '');
    const status = this.statusCode;
    let body: ReadableStream<Uint8Array> | null = null;
    if (outgoing._hasBody && !NULL_BODY.has(status)) {
      body = new ReadableStream<Uint8Array>(
        {
          start: (controller) => {
            this.#controller = controller;
          },
          pull: () => {
            if (!this.#needDrain) return;
            this.#needDrain = false;
            this.emit('drain');
          },
          cancel: () => {
            this.#closed = true;
            this.#onCancel();
          },
        },
        { highWaterMark: HIGH_WATER_MARK, size: (chunk) => chunk.byteLength },
      );
    }
    try {
      this.#resolve(new Response(body, { status, statusText: this.statusMessage, headers }));
    } catch (err) {
      this.#reject(err as Error);
    }
  }

  #enqueue(chunk: unknown, encoding: BufferEncoding | undefined): void {
    if (this.#controller === undefined || this.#closed) return;
    const bytes =
      typeof chunk === 'string' ? Buffer.from(chunk, encoding ?? 'utf8') : (chunk as Uint8Array);
    if (bytes.byteLength > 0) this.#controller.enqueue(bytes);
  }

  #close(): void {
    if (this.#controller === undefined || this.#closed) return;
    this.#closed = true;
    this.#controller.close();
  }
}

/** The header lines of a head as node wrote it (`Name: value` per line), hop-by-hop ones left out. */
function headersOf(head: string): Headers {
  const headers = new Headers();
  const lines = head.split('\r\n');
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    if (line === '') break;
    const colon = line.indexOf(':');
    const name = line.slice(0, colon);
    if (HOP_BY_HOP.has(name.toLowerCase())) continue;
    headers.append(name, line.slice(colon + 1).trim());
  }
  return headers;
}
