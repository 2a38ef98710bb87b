// appendVary: each field once, whatever the case, never after `*`.
import { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { appendVary } from '../../src/internal/headers.js';
import { fakeRequest } from '../helpers/fake-http.js';

function varyAfter(
  current: string | string[] | undefined,
  fields: string | readonly string[],
): unknown {
  const res = new ServerResponse(fakeRequest());
  if (current !== undefined) res.setHeader('Vary', current);
  appendVary(res, fields);
  return res.getHeader('Vary');
}

describe('appendVary', () => {
  it.each([
    [undefined, 'Origin', 'Origin'],
    ['Origin', 'X-API-Key', 'Origin, X-API-Key'],
    ['origin', 'Origin', 'origin'],
    ['Accept-Encoding,Origin', 'ORIGIN', 'Accept-Encoding,Origin'],
    ['Accept-Origin', 'Origin', 'Accept-Origin, Origin'],
    ['Origin-Policy', 'Origin', 'Origin-Policy, Origin'],
    ['*', 'Origin', '*'],
    ['Origin, *', 'Cookie', 'Origin, *'],
    ['Origin', ' Cookie ', 'Origin, Cookie'],
    ['Origin', 'Cookie, Origin, Authorization', 'Origin, Cookie, Authorization'],
    [['Origin', 'Cookie'], 'Cookie', ['Origin', 'Cookie']],
    [['Origin', 'Cookie'], 'Authorization', 'Origin, Cookie, Authorization'],
    ['', 'Origin', 'Origin'],
    ['Origin', 'Cookie, cookie, , Authorization', 'Origin, Cookie, Authorization'],
    [undefined, ['Authorization', 'X-API-Key'], 'Authorization, X-API-Key'],
    ['Origin', ['Authorization', 'origin', 'Cookie'], 'Origin, Authorization, Cookie'],
    ['*', ['Authorization'], '*'],
  ])('Vary %j + %j → %j', (current, fields, expected) => {
    expect(varyAfter(current, fields)).toEqual(expected);
  });

  it('answers a merge asked again as the first time, past the bound of merges it keeps too', () => {
    const fields = ['Authorization', 'Cookie'] as const;
    for (let round = 0; round < 2; round++) {
      expect(varyAfter('Origin', fields)).toBe('Origin, Authorization, Cookie');
      expect(varyAfter('Origin, cookie', fields)).toBe('Origin, cookie, Authorization');
    }
    // 300 values of their own: more than are kept, each merged right
    for (let i = 0; i < 300; i++) {
      expect(varyAfter(`X-Field-${i}`, 'Origin')).toBe(`X-Field-${i}, Origin`);
      expect(varyAfter(`X-Field-${i}, origin`, 'Origin')).toBe(`X-Field-${i}, origin`);
    }
    expect(varyAfter('Origin', fields)).toBe('Origin, Authorization, Cookie');
  });
});
