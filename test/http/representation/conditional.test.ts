import type { IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Middleware } from '../../../src/core/compose.ts';
import { send, sendJson } from '../../../src/core/send.ts';
import {
  checkConditional,
  compareETags,
  createETag,
  evaluatePreconditions,
  formatHttpDate,
  matchesETag,
  parseETagList,
  parseHttpDate,
} from '../../../src/http/representation/conditional.ts';
import { closeAll, serve } from '../../helpers/http.ts';

const BODY = JSON.stringify({ id: 1, text: 'hello' });
const ETAG = createETag(BODY);
const WEAK_ETAG = createETag(BODY, { weak: true });
// sub-second on purpose: HTTP-dates have second precision
const MODIFIED = new Date('2024-05-01T12:00:00.500Z');
const MODIFIED_HTTP = 'Wed, 01 May 2024 12:00:00 GMT';
const BEFORE = 'Wed, 01 May 2024 11:59:59 GMT';
const AFTER = 'Wed, 01 May 2024 12:00:01 GMT';

const app: Middleware = (req, res) => {
  const path = req.url ?? '/';
  res.setHeader('Cache-Control', 'no-cache');
  res.setHeader('Vary', 'Accept-Encoding');
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  if (path === '/doc' || path === '/weak') {
    const etag = path === '/doc' ? ETAG : WEAK_ETAG;
    if (checkConditional(req, res, { etag, lastModified: MODIFIED })) return;
    if (req.method === 'GET' || req.method === 'HEAD') return send(res, 200, BODY);
    return sendJson(res, 200, { changed: true });
  }
  if (path === '/missing') {
    if (checkConditional(req, res, { exists: false })) return;
    return sendJson(res, 201, { created: true });
  }
  if (path === '/dated') {
    if (checkConditional(req, res, { lastModified: MODIFIED.getTime() })) return;
    return send(res, 200, BODY);
  }
};

let base: string;

beforeAll(async () => {
  base = (await serve(app)).url;
});

afterAll(closeAll);

function request(path: string, method = 'GET', headers: Record<string, string> = {}) {
  const init: RequestInit = { method, headers };
  if (method === 'PUT' || method === 'POST') init.body = '{}';
  return fetch(base + path, init);
}

async function expect412(res: Response, header: string) {
  expect(res.status).toBe(412);
  expect(res.headers.get('content-type')).toBe('application/problem+json');
  expect(res.headers.get('etag')).toBeNull();
  const problem = (await res.json()) as { status: number; detail: string };
  expect(problem.status).toBe(412);
  expect(problem.detail).toContain(header);
}

async function expect304(res: Response) {
  expect(res.status).toBe(304);
  expect(await res.text()).toBe('');
  expect(res.headers.get('content-length')).toBeNull();
  expect(res.headers.get('content-type')).toBeNull();
}

describe('createETag', () => {
  it('is a quoted base64url hash, stable for the same bytes', () => {
    expect(ETAG).toMatch(/^"[A-Za-z0-9_-]{22}"$/);
    expect(createETag(BODY)).toBe(ETAG);
    expect(createETag(new TextEncoder().encode(BODY))).toBe(ETAG);
    expect(createETag(`${BODY} `)).not.toBe(ETAG);
  });

  it('prefixes W/ when weak', () => {
    expect(WEAK_ETAG).toBe(`W/${ETAG}`);
  });
});

describe('entity tag lists and comparison', () => {
  it('parses lists, keeping commas inside quotes and skipping malformed members', () => {
    expect(parseETagList('*')).toEqual(['*']);
    expect(parseETagList(' "a" ,W/"b",  "c,d"')).toEqual(['"a"', 'W/"b"', '"c,d"']);
    expect(parseETagList('bare, "ok", W/broken, "unterminated')).toEqual(['"ok"']);
    expect(parseETagList('')).toEqual([]);
  });

  it('follows the comparison table of RFC 9110 §8.8.3.2', () => {
    const table: [string, string, boolean, boolean][] = [
      ['W/"1"', 'W/"1"', false, true],
      ['W/"1"', 'W/"2"', false, false],
      ['W/"1"', '"1"', false, true],
      ['"1"', '"1"', true, true],
    ];
    for (const [a, b, strong, weak] of table) {
      expect(compareETags(a, b, 'strong')).toBe(strong);
      expect(compareETags(a, b, 'weak')).toBe(weak);
    }
  });

  it('matches * against anything and lists member by member', () => {
    expect(matchesETag('*', '"x"', 'strong')).toBe(true);
    expect(matchesETag('"a", "x"', '"x"', 'strong')).toBe(true);
    expect(matchesETag('"a", W/"x"', '"x"', 'strong')).toBe(false);
    expect(matchesETag('"a", W/"x"', '"x"', 'weak')).toBe(true);
    expect(matchesETag('"x"', undefined, 'weak')).toBe(false);
  });
});

describe('HTTP-dates', () => {
  it('parses the three formats recipients must accept', () => {
    const expected = Date.UTC(1994, 10, 6, 8, 49, 37);
    expect(parseHttpDate('Sun, 06 Nov 1994 08:49:37 GMT')).toBe(expected);
    expect(parseHttpDate('Sunday, 06-Nov-94 08:49:37 GMT')).toBe(expected);
    expect(parseHttpDate('Sun Nov  6 08:49:37 1994')).toBe(expected);
  });

  it('rejects anything else', () => {
    for (const value of [
      'yesterday',
      '2024-05-01T12:00:00Z',
      'Wed, 01 May 2024 12:00:00 UTC',
      'Wed, 31 Feb 2024 12:00:00 GMT',
      'Wed, 01 Foo 2024 12:00:00 GMT',
      'Wed, 01 May 2024 25:00:00 GMT',
      `${MODIFIED_HTTP}, ${MODIFIED_HTTP}`,
    ]) {
      expect(parseHttpDate(value), value).toBeUndefined();
    }
  });

  it('formats an IMF-fixdate', () => {
    expect(formatHttpDate(MODIFIED)).toBe(MODIFIED_HTTP);
    expect(formatHttpDate(MODIFIED.getTime())).toBe(MODIFIED_HTTP);
    expect(() => formatHttpDate(new Date('nope'))).toThrow(TypeError);
  });
});

describe('evaluatePreconditions', () => {
  const fake = (method: string, headers: Record<string, string>) =>
    ({ method, headers }) as unknown as IncomingMessage;

  it('ignores preconditions on CONNECT, OPTIONS and TRACE', () => {
    for (const method of ['CONNECT', 'OPTIONS', 'TRACE']) {
      expect(evaluatePreconditions(fake(method, { 'if-match': '"other"' }), { etag: ETAG })).toBe(
        'proceed',
      );
    }
  });

  it('rejects an unquoted entity tag', () => {
    expect(() => evaluatePreconditions(fake('GET', {}), { etag: 'abc' })).toThrow(TypeError);
  });

  it('returns each outcome', () => {
    expect(evaluatePreconditions(fake('GET', {}), { etag: ETAG })).toBe('proceed');
    expect(evaluatePreconditions(fake('GET', { 'if-none-match': ETAG }), { etag: ETAG })).toBe(
      'not-modified',
    );
    expect(evaluatePreconditions(fake('PUT', { 'if-match': '"x"' }), { etag: ETAG })).toBe(
      'precondition-failed',
    );
  });
});

describe('conditional GET and HEAD', () => {
  it('answers an unconditional GET with ETag and Last-Modified', async () => {
    const res = await request('/doc');
    expect(res.status).toBe(200);
    expect(res.headers.get('etag')).toBe(ETAG);
    expect(res.headers.get('last-modified')).toBe(MODIFIED_HTTP);
    expect(await res.text()).toBe(BODY);
  });

  it('gives HEAD the same ETag and Content-Length as GET, without a body', async () => {
    const get = await request('/doc');
    const head = await request('/doc', 'HEAD');
    expect(head.status).toBe(200);
    expect(head.headers.get('etag')).toBe(get.headers.get('etag'));
    expect(head.headers.get('content-length')).toBe(String(Buffer.byteLength(BODY)));
    expect(head.headers.get('content-length')).toBe(get.headers.get('content-length'));
    expect(await head.text()).toBe('');
  });

  it('answers 304 without a body to a matching If-None-Match, keeping the validators', async () => {
    const res = await request('/doc', 'GET', { 'If-None-Match': ETAG });
    await expect304(res);
    expect(res.headers.get('etag')).toBe(ETAG);
    expect(res.headers.get('last-modified')).toBe(MODIFIED_HTTP);
    expect(res.headers.get('cache-control')).toBe('no-cache');
    expect(res.headers.get('vary')).toBe('Accept-Encoding');
  });

  it('answers 304 to HEAD too', async () => {
    await expect304(await request('/doc', 'HEAD', { 'If-None-Match': ETAG }));
  });

  it('compares If-None-Match weakly', async () => {
    await expect304(await request('/doc', 'GET', { 'If-None-Match': `W/${ETAG}` }));
    await expect304(await request('/weak', 'GET', { 'If-None-Match': WEAK_ETAG }));
    await expect304(await request('/weak', 'GET', { 'If-None-Match': ETAG }));
  });

  it('finds the tag in a list', async () => {
    await expect304(await request('/doc', 'GET', { 'If-None-Match': `"a,b", ${ETAG}, "c"` }));
  });

  it('answers 200 when no tag matches', async () => {
    const res = await request('/doc', 'GET', { 'If-None-Match': '"other", W/"another"' });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(BODY);
  });

  it('answers 304 to If-None-Match: * when the resource exists', async () => {
    await expect304(await request('/doc', 'GET', { 'If-None-Match': '*' }));
  });

  it('answers 304 when If-Modified-Since equals Last-Modified, at second precision', async () => {
    const res = await request('/doc', 'GET', { 'If-Modified-Since': MODIFIED_HTTP });
    await expect304(res);
    expect(res.headers.get('last-modified')).toBe(MODIFIED_HTTP);
  });

  it('answers 304 when If-Modified-Since is newer', async () => {
    await expect304(await request('/doc', 'GET', { 'If-Modified-Since': AFTER }));
  });

  it('answers 200 when If-Modified-Since is older', async () => {
    const res = await request('/doc', 'GET', { 'If-Modified-Since': BEFORE });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(BODY);
  });

  it('ignores an invalid If-Modified-Since', async () => {
    const res = await request('/doc', 'GET', { 'If-Modified-Since': '2099-01-01' });
    expect(res.status).toBe(200);
  });

  it('accepts the obsolete date formats', async () => {
    await expect304(
      await request('/doc', 'GET', { 'If-Modified-Since': 'Wednesday, 01-May-24 12:00:00 GMT' }),
    );
    await expect304(
      await request('/doc', 'GET', { 'If-Modified-Since': 'Wed May  1 12:00:00 2024' }),
    );
  });

  it('ignores If-Modified-Since when If-None-Match is present', async () => {
    const res = await request('/doc', 'GET', {
      'If-None-Match': '"other"',
      'If-Modified-Since': AFTER,
    });
    expect(res.status).toBe(200);
  });

  it('works with Last-Modified alone, given as epoch milliseconds', async () => {
    const res = await request('/dated', 'GET', { 'If-Modified-Since': MODIFIED_HTTP });
    await expect304(res);
    expect(res.headers.get('etag')).toBeNull();
    expect(res.headers.get('last-modified')).toBe(MODIFIED_HTTP);
  });
});

describe('preconditions on state-changing requests', () => {
  it('proceeds when If-Match matches strongly', async () => {
    const res = await request('/doc', 'PUT', { 'If-Match': ETAG });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ changed: true });
  });

  it('leaves ETag and Last-Modified of the old state off the answer', async () => {
    const res = await request('/doc', 'PUT', { 'If-Match': ETAG });
    expect(res.headers.get('etag')).toBeNull();
    expect(res.headers.get('last-modified')).toBeNull();
  });

  it('answers 412 when If-Match does not match', async () => {
    await expect412(await request('/doc', 'PUT', { 'If-Match': '"stale"' }), 'If-Match');
  });

  it('compares If-Match strongly', async () => {
    await expect412(await request('/doc', 'PUT', { 'If-Match': `W/${ETAG}` }), 'If-Match');
    await expect412(await request('/weak', 'PUT', { 'If-Match': WEAK_ETAG }), 'If-Match');
  });

  it('matches If-Match: * only when the resource exists', async () => {
    expect((await request('/doc', 'DELETE', { 'If-Match': '*' })).status).toBe(200);
    await expect412(await request('/missing', 'PUT', { 'If-Match': '*' }), 'If-Match');
  });

  it('answers 412 to a matching If-None-Match on PUT', async () => {
    await expect412(await request('/doc', 'PUT', { 'If-None-Match': ETAG }), 'If-None-Match');
    await expect412(await request('/doc', 'PUT', { 'If-None-Match': '*' }), 'If-None-Match');
  });

  it('creates with If-None-Match: * when nothing exists', async () => {
    const res = await request('/missing', 'PUT', { 'If-None-Match': '*' });
    expect(res.status).toBe(201);
  });

  it('answers 412 when modified after If-Unmodified-Since', async () => {
    await expect412(
      await request('/doc', 'PUT', { 'If-Unmodified-Since': BEFORE }),
      'If-Unmodified-Since',
    );
    // on GET as well: 412 is not limited to unsafe methods
    await expect412(
      await request('/doc', 'GET', { 'If-Unmodified-Since': BEFORE }),
      'If-Unmodified-Since',
    );
  });

  it('proceeds when If-Unmodified-Since is equal or later, or invalid', async () => {
    expect((await request('/doc', 'PUT', { 'If-Unmodified-Since': MODIFIED_HTTP })).status).toBe(
      200,
    );
    expect((await request('/doc', 'PUT', { 'If-Unmodified-Since': AFTER })).status).toBe(200);
    expect((await request('/doc', 'PUT', { 'If-Unmodified-Since': 'soon' })).status).toBe(200);
  });

  it('ignores If-Unmodified-Since when If-Match is present', async () => {
    const res = await request('/doc', 'PUT', { 'If-Match': ETAG, 'If-Unmodified-Since': BEFORE });
    expect(res.status).toBe(200);
  });

  it('evaluates If-Match before If-None-Match', async () => {
    const res = await request('/doc', 'GET', { 'If-Match': '"stale"', 'If-None-Match': ETAG });
    await expect412(res, 'If-Match');
  });

  it('ignores If-Modified-Since on PUT', async () => {
    expect((await request('/doc', 'PUT', { 'If-Modified-Since': AFTER })).status).toBe(200);
  });
});
