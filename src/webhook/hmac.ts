import { hash } from 'node:crypto';

/** SHA-256's block size in bytes. */
const BLOCK = 64;
const SHA256 = 'sha256';

/**
 * An HMAC-SHA256 key (RFC 2104), its inner and outer pads computed once: each message then
 * costs two one-shot `crypto.hash` calls. A `crypto.createHmac` object per message costs
 * several times more on a sender's hot path (a native handle each, finalized later by the GC).
 * The pads stand for the key: they live in buffers of their own, and the copy made to hash a
 * message is zeroed once hashed.
 *
 * @see {@link https://www.rfc-editor.org/rfc/rfc2104 | RFC 2104: HMAC}
 */
export class HmacSha256Key {
  readonly #inner = Buffer.alloc(BLOCK, 0x36);
  readonly #outer = Buffer.alloc(BLOCK, 0x5c);

  constructor(key: Buffer) {
    const k = key.length > BLOCK ? hash(SHA256, key, 'buffer') : key;
    for (let i = 0; i < k.length; i++) {
      this.#inner[i]! ^= k[i]!;
      this.#outer[i]! ^= k[i]!;
    }
  }

  /** The base64 HMAC of `prefix` (ASCII) followed by `body` (a string as UTF-8). */
  sign(prefix: string, body: string | Buffer): string {
    const bodyBytes = typeof body === 'string' ? Buffer.byteLength(body) : body.length;
    const message = Buffer.allocUnsafe(BLOCK + prefix.length + bodyBytes);
    this.#inner.copy(message, 0);
    message.write(prefix, BLOCK, 'latin1');
    if (typeof body === 'string') message.write(body, BLOCK + prefix.length, 'utf8');
    else body.copy(message, BLOCK + prefix.length);
    const innerHash = hash(SHA256, message, 'buffer');
    message.fill(0, 0, BLOCK);
    const outer = Buffer.allocUnsafe(BLOCK + innerHash.length);
    this.#outer.copy(outer, 0);
    innerHash.copy(outer, BLOCK);
    const digest = hash(SHA256, outer, 'base64');
    outer.fill(0, 0, BLOCK);
    return digest;
  }
}
