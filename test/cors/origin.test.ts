import { describe, expect, it } from 'vitest';
import { createOriginMatcher } from '../../src/cors/origin.js';
import { thrownTypeError } from '../helpers/errors.js';

describe('createOriginMatcher', () => {
  const match = createOriginMatcher(['https://example.com', 'http://localhost:5173']);

  it('allows listed origins, synchronously', () => {
    expect(match('https://example.com')).toBe(true);
    expect(match('http://localhost:5173')).toBe(true);
  });

  it('refuses look-alikes and absent origins', () => {
    for (const origin of [
      'https://example.com.evil.net',
      'https://evil-example.com',
      'https://sub.example.com',
      'http://example.com',
      'https://example.com:8443',
      'HTTPS://EXAMPLE.COM',
      'https://Example.com',
      'https://example.com/',
      ' https://example.com',
      'http://localhost:5174',
      'http://127.0.0.1:5173',
      'null',
      '',
      undefined,
    ]) {
      expect(match(origin), String(origin)).toBe(false);
    }
  });

  it('allows the null origin only when listed', () => {
    expect(createOriginMatcher([/.*/])('null')).toBe(false);
    expect(createOriginMatcher(['https://example.com'])('null')).toBe(false);
    expect(createOriginMatcher(['null'])('null')).toBe(true);
    expect(createOriginMatcher(['null', /.*/])('null')).toBe(true);
  });

  it('refuses an absent origin when patterns are listed too', () => {
    expect(createOriginMatcher([/.*/])(undefined)).toBe(false);
    expect(createOriginMatcher(['null', /[\s\S]*/])(undefined)).toBe(false);
    expect(createOriginMatcher(['https://example.com', /.*/])(undefined)).toBe(false);
  });

  it('matches patterns against the whole origin', () => {
    const byPattern = createOriginMatcher([/https:\/\/[a-z0-9-]+\.example\.com/]);
    expect(byPattern('https://app.example.com')).toBe(true);
    expect(byPattern('https://app.example.com.evil.net')).toBe(false);
    expect(byPattern('http://app.example.com')).toBe(false);
    expect(byPattern('https://example.com')).toBe(false);
  });

  it('is not fooled by stateful g/y patterns', () => {
    const sticky = createOriginMatcher([/https:\/\/a\.example\.com/g]);
    expect(sticky('https://a.example.com')).toBe(true);
    expect(sticky('https://a.example.com')).toBe(true);
  });

  it('never hands null or an absent origin to a function', () => {
    const seen: string[] = [];
    const byFn = createOriginMatcher((origin) => {
      seen.push(origin);
      return true;
    });
    expect(byFn('null')).toBe(false);
    expect(byFn(undefined)).toBe(false);
    expect(byFn('https://x.test')).toBe(true);
    expect(seen).toEqual(['https://x.test']);
  });

  it('returns a promise for an async function, true only for true', async () => {
    const byAsync = createOriginMatcher(async (origin) => origin.endsWith('.example.com'));
    const pending = byAsync('https://a.example.com');
    expect(pending).toBeInstanceOf(Promise);
    await expect(pending).resolves.toBe(true);
    await expect(byAsync('https://a.example.org')).resolves.toBe(false);
    const truthy = createOriginMatcher(() => 'yes' as unknown as boolean);
    expect(truthy('https://a.test')).toBe(false);
  });

  it('refuses, without throwing, when a function returns neither a boolean nor a thenable', () => {
    // biome-ignore lint/suspicious/noThenProperty: a `then` that is no function is the case
    const notThenable = { then: true };
    for (const returned of [undefined, null, 1, 'true', {}, notThenable]) {
      const byFn = createOriginMatcher(() => returned as unknown as boolean);
      expect(byFn('https://a.test'), String(returned)).toBe(false);
    }
  });

  it('waits for a thenable that is not a Promise', async () => {
    const thenable = {
      // biome-ignore lint/suspicious/noThenProperty: a thenable that is no Promise is the case
      then: (resolve: (v: boolean) => void) => resolve(true),
    };
    const byThenable = createOriginMatcher(() => thenable as unknown as boolean);
    await expect(byThenable('https://a.test')).resolves.toBe(true);
  });

  it("allows everything with '*', null and absent included", () => {
    const any = createOriginMatcher('*');
    expect(any('https://anything.test')).toBe(true);
    expect(any('null')).toBe(true);
    expect(any(undefined)).toBe(true);
  });

  it('allows nothing with an empty list', () => {
    expect(createOriginMatcher([])('https://example.com')).toBe(false);
  });

  it.each([
    ['http://localhost:5173/', 'http://localhost:5173'],
    ['https://example.com/app', 'https://example.com'],
    ['https://EXAMPLE.com', 'https://example.com'],
    ['HTTPS://example.com', 'https://example.com'],
    ['https://example.com:443', 'https://example.com'],
    ['https://example.com?x=1', 'https://example.com'],
    [' https://example.com', 'https://example.com'],
    ['chrome-extension://abc/', 'chrome-extension://abc'],
  ])('rejects %j with a hint for %s', (configured, hint) => {
    const err = thrownTypeError(() => createOriginMatcher([configured]));
    expect(err.code).toBe('ERR_INVALID_OPTION');
    expect(err.message).toContain(`Did you mean \`${hint}\`?`);
  });

  it('accepts origins of non-special schemes as browsers send them', () => {
    expect(createOriginMatcher(['capacitor://localhost'])('capacitor://localhost')).toBe(true);
  });

  it('names itself in option errors, with a hint only for a lone string', () => {
    const generic =
      "createOriginMatcher: `origins` must be '*', an array of origins and RegExps, or a function.";
    for (const origins of [42, {}, null, new Set(['https://example.com'])]) {
      const err = thrownTypeError(() => createOriginMatcher(origins as never));
      expect(err.code, String(origins)).toBe('ERR_INVALID_OPTION');
      expect(err.message, String(origins)).toBe(generic);
    }
    expect(thrownTypeError(() => createOriginMatcher('null' as never)).message).toBe(
      `${generic} Did you mean \`["null"]\`?`,
    );
    expect(thrownTypeError(() => createOriginMatcher(['https://example.com/'])).message).toMatch(
      /^createOriginMatcher: origins\[0\] "https:\/\/example\.com\/"/,
    );
  });

  it('rejects entries that are no origin at all', () => {
    expect(thrownTypeError(() => createOriginMatcher(['example.com'])).message).toContain(
      'scheme://host[:port]',
    );
    expect(thrownTypeError(() => createOriginMatcher(['file:///tmp/x'])).message).toContain(
      "'null'",
    );
    expect(thrownTypeError(() => createOriginMatcher(['*'])).message).toContain("`origins: '*'`");
    expect(thrownTypeError(() => createOriginMatcher([42 as unknown as string])).message).toContain(
      'origins[0]',
    );
    expect(
      thrownTypeError(() => createOriginMatcher('https://example.com' as unknown as '*')).message,
    ).toContain('Did you mean `["https://example.com"]`?');
  });

  it('does not keep a reference to the caller’s list', () => {
    const list = ['https://example.com'];
    const m = createOriginMatcher(list);
    list.push('https://late.test');
    expect(m('https://late.test')).toBe(false);
  });
});
