import { describe, expect, it } from 'vitest';
import { HttpError } from '../../../src/core/errors/errors.js';
import { canonicalPath, getPathname } from '../../../src/http/routing/request-path.js';
import { mount } from '../../../src/http/routing/router.js';

const refusal = (path: string) => {
  try {
    canonicalPath(path);
  } catch (err) {
    expect(err).toBeInstanceOf(HttpError);
    return { status: (err as HttpError).status, code: (err as HttpError).code };
  }
  return undefined;
};

describe('canonicalPath', () => {
  it.each([
    ['/api/events', '/api/events'],
    ['/', '/'],
    ['/api/', '/api/'],
    ['/.well-known/openid-configuration', '/.well-known/openid-configuration'],
    ['/%61pi/%7Euser', '/api/~user'],
    ['/%41%5a%30%2D%2e%5F', '/AZ0-._'],
    ['/caf%c3%a9', '/caf%C3%A9'],
    ['/a%20b%3f%23%25', '/a%20b%3F%23%25'],
    ['/api/events;', '/api/events;'],
    ['/a.b/..c/.d', '/a.b/..c/.d'],
  ])('%s is %s', (path, expected) => {
    expect(canonicalPath(path)).toBe(expected);
  });

  it('returns the very string when nothing needs normalising', () => {
    const path = '/api/messages/42';
    expect(canonicalPath(path)).toBe(path);
  });

  it.each([
    ['/api%2Fevents', 'ERR_AMBIGUOUS_PATH'],
    ['/api%2fevents', 'ERR_AMBIGUOUS_PATH'],
    ['/api%5Cevents', 'ERR_AMBIGUOUS_PATH'],
    ['/api\\events', 'ERR_AMBIGUOUS_PATH'],
    ['/x/../api', 'ERR_AMBIGUOUS_PATH'],
    ['/./api', 'ERR_AMBIGUOUS_PATH'],
    ['/api/.', 'ERR_AMBIGUOUS_PATH'],
    ['/api/..', 'ERR_AMBIGUOUS_PATH'],
    ['/%2e%2E/api', 'ERR_AMBIGUOUS_PATH'],
    ['/%2e/api', 'ERR_AMBIGUOUS_PATH'],
    ['//api', 'ERR_AMBIGUOUS_PATH'],
    ['/api//events', 'ERR_AMBIGUOUS_PATH'],
    ['/api/events%00', 'ERR_INVALID_PATH'],
    ['/api/%0a', 'ERR_INVALID_PATH'],
    ['/api/%7f', 'ERR_INVALID_PATH'],
    ['/api/%', 'ERR_INVALID_PATH'],
    ['/api/%4', 'ERR_INVALID_PATH'],
    ['/api/%zz', 'ERR_INVALID_PATH'],
    ['/%%32%65', 'ERR_INVALID_PATH'],
  ])('refuses %s with a 400 (%s)', (path, code) => {
    expect(refusal(path)).toEqual({ status: 400, code });
  });

  it('decodes once: an encoded % stays encoded, never a second escape', () => {
    expect(canonicalPath('/%252e%252e/api')).toBe('/%252e%252e/api');
    expect(canonicalPath('/%2561pi')).toBe('/%2561pi');
  });
});

describe('getPathname', () => {
  const req = (url: string) => ({ url, headers: {} }) as never;

  it('reads the path of the origin and absolute forms, without the query', () => {
    expect(getPathname(req('/%61pi/x?api_key=1'))).toBe('/api/x');
    expect(getPathname(req('http://alice:pw@host/%61pi?q'))).toBe('/api');
    expect(getPathname(req('HTTPS://host'))).toBe('/');
  });

  it('leaves the asterisk and authority forms as they are', () => {
    expect(getPathname(req('*'))).toBe('*');
    expect(getPathname(req('example.com:443'))).toBe('example.com:443');
  });
});

describe('mount', () => {
  const probe = (options?: Parameters<typeof mount>[2]) => {
    const seen: string[] = [];
    const mounted = mount(
      '/api',
      (req, _res, next) => {
        seen.push(req.url ?? '');
        return next();
      },
      options,
    );
    return { seen, mounted };
  };

  it('covers every case of the prefix by default, and a `;` parameter on it', async () => {
    const { seen, mounted } = probe();
    for (const url of [
      '/api',
      '/API',
      '/Api/x',
      '/api;jsessionid=1',
      '/%61pi/x',
      '/apiary',
      '/ap',
      '/',
    ]) {
      await mounted({ url, headers: {} } as never, {} as never, async () => {});
    }
    expect(seen).toEqual(['/api', '/API', '/Api/x', '/api;jsessionid=1', '/%61pi/x']);
  });

  it('keeps to the case written with caseSensitive: true', async () => {
    const { seen, mounted } = probe({ caseSensitive: true });
    for (const url of ['/api/x', '/API/x', '/Api']) {
      await mounted({ url, headers: {} } as never, {} as never, async () => {});
    }
    expect(seen).toEqual(['/api/x']);
  });

  it('refuses a path readers could take differently, under the prefix or not', async () => {
    const { mounted } = probe();
    for (const url of ['/x/../api', '/api%2Fx', '//api', '/other%2Fx']) {
      await expect(
        (async () => mounted({ url, headers: {} } as never, {} as never, async () => {}))(),
      ).rejects.toMatchObject({ status: 400 });
    }
  });

  it('refuses unknown options, a non-boolean caseSensitive and a prefix without /', () => {
    expect(() => mount('/api', () => {}, { caseSensitve: true } as never)).toThrow(
      /Did you mean `caseSensitive`/,
    );
    expect(() => mount('/api', () => {}, { caseSensitive: 'yes' } as never)).toThrow(TypeError);
    expect(() => mount('api', () => {})).toThrow(TypeError);
    expect(() => mount('/api', undefined as never)).toThrow(TypeError);
  });
});
