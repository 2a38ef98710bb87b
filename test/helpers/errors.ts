import { expect } from 'vitest';

/** The TypeError `fn` throws (failing the test when it throws nothing or something else). */
export function thrownTypeError(fn: () => unknown): TypeError & { code?: string } {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(TypeError);
    return err as TypeError & { code?: string };
  }
  throw new Error('expected a TypeError');
}
