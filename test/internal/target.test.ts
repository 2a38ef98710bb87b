import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { splitTarget, targetPath } from '../../src/internal/target.js';

describe('splitTarget', () => {
  it.each([
    ['/a/b?c=1', '/a/b', '?c=1'],
    ['/a', '/a', ''],
    ['/?', '/', '?'],
    ['http://host/a/b?c=1', '/a/b', '?c=1'],
    ['HTTPS://Host:8443/a', '/a', ''],
    ['http://host', '/', ''],
    ['http://host?x=1', '/', '?x=1'],
    ['http://user@host:1/p#f', '/p', ''],
    ['http://alice:alice-password@host/api/me?x=1#f', '/api/me', '?x=1'],
    ['/a#f?x', '/a', ''],
    ['/a?x#f', '/a', '?x'],
    ['*', '*', ''],
    ['example.com:443', 'example.com:443', ''],
    ['ftp://alice:pw@host/a', '/a', ''],
    ['foo+bar.baz-1://host', '/', ''],
  ])('splits %s', (target, path, search) => {
    expect(splitTarget(target)).toEqual({ path, search });
    expect(targetPath(target)).toBe(path);
  });

  it('targetPath agrees with splitTarget on any target', () => {
    const target = fc.oneof(
      fc.string(),
      fc.string().map((s) => `/${s}`),
      fc
        .tuple(fc.constantFrom('http://', 'https://', 'HTTP://'), fc.string())
        .map(([scheme, rest]) => scheme + rest),
    );
    fc.assert(
      fc.property(target, (t) => {
        const { path, search } = splitTarget(t);
        expect(targetPath(t)).toBe(path);
        expect(search === '' || search.startsWith('?')).toBe(true);
        expect(path.includes('?')).toBe(false);
      }),
    );
  });
});
