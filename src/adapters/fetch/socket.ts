import { Duplex } from 'node:stream';

/**
 * What a portico middleware may ask of `req.socket` when the request came as a Web `Request`:
 * the client's address (when the host knows it), whether the connection was TLS, and the
 * socket options node's own sockets take (no-ops here). Writes are dropped: the response
 * bytes are taken from the response itself ({@link FetchServerResponse}).
 * @internal
 */
export class FetchSocket extends Duplex {
  readonly remoteAddress: string | undefined;
  readonly remotePort: number | undefined = undefined;
  readonly remoteFamily: string | undefined;
  readonly encrypted: boolean;

  constructor(remoteAddress: string | undefined, encrypted: boolean) {
    super();
    this.remoteAddress = remoteAddress;
    this.remoteFamily =
      remoteAddress === undefined ? undefined : remoteAddress.includes(':') ? 'IPv6' : 'IPv4';
    this.encrypted = encrypted;
    // a response destroyed with an error destroys its socket with it: nobody else to tell
    this.on('error', () => {});
  }

  override _read(): void {}

  override _write(_chunk: unknown, _encoding: BufferEncoding, callback: () => void): void {
    callback();
  }

  setNoDelay(): this {
    return this;
  }

  setKeepAlive(): this {
    return this;
  }

  setTimeout(): this {
    return this;
  }

  ref(): this {
    return this;
  }

  unref(): this {
    return this;
  }
}
