// The sealer of portico/client: what it seals opens with the same keys only, a key is rotated
// by putting the new one first (old values still open), a purpose never opens another's, and
// an altered, expired or oversized value reads as absent.
import { describe, expect, it } from 'vitest';
import { createSealer } from '../../src/client/seal.ts';

const OLD = 'the old sealing key, 32 bytes or more';
const NEW = 'the new sealing key, 32 bytes or more';

describe('createSealer()', () => {
  it('opens what it sealed, and after a rotation still opens what the old key sealed', async () => {
    const before = createSealer('t()', 'secret', OLD, 'purpose');
    const sealed = await before.seal({ a: 1 }, 60_000);
    expect(await before.open(sealed)).toEqual({ a: 1 });
    const rotated = createSealer('t()', 'secret', [NEW, OLD], 'purpose');
    expect(await rotated.open(sealed)).toEqual({ a: 1 });
    const fresh = await rotated.seal({ b: 2 }, 60_000);
    // sealed with the new key: the old key alone cannot open it
    expect(await before.open(fresh)).toBeUndefined();
    expect(await createSealer('t()', 'secret', NEW, 'purpose').open(fresh)).toEqual({ b: 2 });
  });

  it('never opens a value of another purpose, an altered, expired or oversized one', async () => {
    const sealer = createSealer('t()', 'secret', OLD, 'one');
    const sealed = await sealer.seal({ a: 1 }, 60_000);
    expect(await createSealer('t()', 'secret', OLD, 'two').open(sealed)).toBeUndefined();
    const parts = sealed.split('.');
    const text = parts[3]!;
    parts[3] = `${text.startsWith('A') ? 'B' : 'A'}${text.slice(1)}`; // the ciphertext changed
    const altered = parts.join('.');
    expect(await sealer.open(altered)).toBeUndefined();
    expect(await sealer.open(await sealer.seal({ a: 1 }, -1_000))).toBeUndefined();
    for (const bad of [undefined, '', 42, 'x'.repeat(20_000)]) {
      expect(await sealer.open(bad)).toBeUndefined();
    }
  });

  it('refuses short keys, an empty list, and a list with a key missing', () => {
    expect(() => createSealer('t()', 'secret', 'short', 'p')).toThrow(
      't(): `secret` must be a string or bytes of 32 or more',
    );
    expect(() => createSealer('t()', 'secret', [], 'p')).toThrow('t(): `secret` is required');
    expect(() => createSealer('t()', 'secret', [NEW, undefined], 'p')).toThrow(
      't(): `secret` is required',
    );
  });
});
