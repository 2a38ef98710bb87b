// HmacSha256Key against node's createHmac: the same digest for any key, prefix and body.
import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { HmacSha256Key } from '../../src/webhook/hmac.js';

describe('HmacSha256Key', () => {
  it('signs as createHmac does, for keys shorter and longer than a block, strings and buffers', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 0, maxLength: 200 }),
        fc.string({
          unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
        }),
        fc.oneof(fc.string({ unit: 'binary' }), fc.uint8Array({ maxLength: 5000 })),
        (keyBytes, prefix, body) => {
          const key = Buffer.from(keyBytes);
          const data = typeof body === 'string' ? body : Buffer.from(body);
          const want = createHmac('sha256', key).update(prefix).update(data).digest('base64');
          expect(new HmacSha256Key(key).sign(prefix, data)).toBe(want);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('leaves no copy of its pads in the buffers it hashed', () => {
    const allocated: Buffer[] = [];
    const allocUnsafe = Buffer.allocUnsafe;
    const spy = vi.spyOn(Buffer, 'allocUnsafe').mockImplementation((size: number) => {
      const buffer = allocUnsafe(size);
      allocated.push(buffer);
      return buffer;
    });
    try {
      const key = new HmacSha256Key(Buffer.alloc(32, 0xab));
      key.sign('msg_1.2.', 'x');
    } finally {
      spy.mockRestore();
    }
    expect(allocated).toHaveLength(2); // the inner and the outer message
    // the pads sit in the first 64 bytes of each: zeroed once hashed
    for (const buffer of allocated) expect(buffer.subarray(0, 64).every((b) => b === 0)).toBe(true);
  });
});
