import { randomBytes } from 'node:crypto';
import type { OutgoingHttpHeaders } from 'node:http';
import { connect } from 'node:net';
import { isDeepStrictEqual } from 'node:util';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Middleware } from '../../../src/core/compose.js';
import { HttpError } from '../../../src/core/errors/errors.js';
import { PROBLEM_TYPE, requestPath } from '../../../src/core/problem.js';
import { sendJson } from '../../../src/core/send.js';
import {
  DEFAULT_BODY_LIMIT,
  readBody,
  readForm,
  readJson,
  readText,
} from '../../../src/http/body/body.js';
import { closeAll, json, type Reply, request, serve } from '../../helpers/http.js';
import { captureLogger } from '../../helpers/logger.js';

/** POSTs `body` in one piece: node sets Content-Length from it. */
const post = (path: string, body: string | Buffer, headers: OutgoingHttpHeaders = {}) =>
  request(port, path, { method: 'POST', headers, body });

/** POSTs `count` chunks of `size` bytes with chunked transfer coding (no Content-Length). */
const postChunked = (
  path: string,
  count: number,
  size: number,
  headers: OutgoingHttpHeaders = { 'Content-Type': 'application/json' },
) =>
  request(port, path, {
    method: 'POST',
    headers,
    body: Array<Buffer>(count).fill(Buffer.alloc(size, 0x20)),
  });

const JSON_HEADERS = { 'Content-Type': 'application/json' };

let aborted: { entered: () => void; settled: (outcome: unknown) => void } | undefined;

const routes: Record<string, Middleware> = {
  '/json': async (req, res) => {
    sendJson(res, 200, { value: await readJson(req) });
  },
  '/json-small': async (req, res) => {
    sendJson(res, 200, { value: await readJson(req, { limit: 16 }) });
  },
  '/json-merge-patch-only': async (req, res) => {
    sendJson(res, 200, {
      value: await readJson(req, { types: ['application/merge-patch+json'] }),
    });
  },
  '/json-twice': async (req, res) => {
    const first = await readJson(req);
    const second = await readJson(req);
    sendJson(res, 200, { first, second, equal: isDeepStrictEqual(first, second) });
  },
  '/json-keys': async (req, res) => {
    const body = await readJson<Record<string, unknown>>(req);
    const merged = Object.assign({}, body) as Record<string, unknown>;
    const nested = body.nested as Record<string, unknown> | undefined;
    sendJson(res, 200, {
      keys: Object.keys(body),
      nestedKeys: nested ? Object.keys(nested) : null,
      ownProto: Object.hasOwn(body, '__proto__'),
      plainPrototype: Object.getPrototypeOf(body) === Object.prototype,
      mergedPolluted: 'polluted' in merged,
    });
  },
  '/form': async (req, res) => {
    const form = await readForm(req);
    sendJson(res, 200, {
      isParams: form instanceof URLSearchParams,
      scope: form.getAll('scope'),
      grant: form.get('grant_type'),
      note: form.get('note'),
    });
  },
  '/text': async (req, res) => {
    const text = await readText(req);
    res.setHeader('Content-Type', 'text/plain; charset=utf-8');
    res.end(`[${text}]`);
  },
  '/consumed': async (req, res) => {
    for await (const _chunk of req) {
      // read the body by hand, as another parser would
    }
    sendJson(res, 200, await readJson(req));
  },
  '/abort': async (req, res) => {
    aborted?.entered();
    try {
      const value = await readJson(req);
      aborted?.settled(value);
      sendJson(res, 200, value);
    } catch (err) {
      aborted?.settled(err);
      throw err;
    }
  },
  '/raw': async (req, res) => {
    const bytes = await readBody(req);
    sendJson(res, 200, { length: bytes.length });
  },
};

const log = captureLogger();
const logged = log.errors;
let port: number;

beforeAll(async () => {
  ({ port } = await serve(
    (req, res, next) => {
      const handler = routes[requestPath(req)];
      return handler ? handler(req, res, next) : next();
    },
    { logger: log },
  ));
});

afterAll(closeAll);

describe('readJson', () => {
  it('reads a JSON body', async () => {
    const answer = await post(
      '/json',
      JSON.stringify({ text: 'héllo ✓', n: [1, 2] }),
      JSON_HEADERS,
    );
    expect(answer.status).toBe(200);
    expect(json(answer).value).toEqual({ text: 'héllo ✓', n: [1, 2] });
  });

  it.each([
    'application/json; charset=utf-8',
    'application/json; charset=UTF-8',
    'Application/JSON',
    'application/merge-patch+json',
    'application/problem+json',
  ])('accepts Content-Type %s', async (type) => {
    const answer = await post('/json', '{"a":1}', { 'Content-Type': type });
    expect(answer.status).toBe(200);
    expect(json(answer).value).toEqual({ a: 1 });
  });

  it('answers 415 without a Content-Type', async () => {
    const answer = await post('/json', '{"a":1}', {});
    expect(answer.status).toBe(415);
    expect(answer.headers['content-type']).toBe(PROBLEM_TYPE);
    expect(json(answer).detail).toContain('application/json');
  });

  it.each([
    'text/plain',
    'application/x-www-form-urlencoded',
    'application/jsonx',
    'multipart/form-data; boundary=x',
    'application/json;;;=',
  ])('answers 415 for Content-Type %s', async (type) => {
    const answer = await post('/json', '{"a":1}', { 'Content-Type': type });
    expect(answer.status).toBe(415);
    expect(json(answer).status).toBe(415);
  });

  it('answers 400 for two Content-Type lines, whichever node would keep (RFC 9110 §5.3)', async () => {
    for (const types of [
      ['application/json', 'text/plain'],
      ['application/json', 'application/json'],
    ]) {
      const answer = await post('/json', '{"a":1}', { 'Content-Type': types });
      expect(answer.status, types.join(', ')).toBe(400);
      expect(json(answer)).toMatchObject({
        status: 400,
        detail: 'Content-Type must be sent once.',
      });
    }
    const form = await post('/form', 'a=1', {
      'content-type': ['application/x-www-form-urlencoded', 'application/json'],
    });
    expect(form.status).toBe(400);
  });

  it('answers 415 for a charset other than UTF-8', async () => {
    const answer = await post('/json', '{"a":1}', {
      'Content-Type': 'application/json; charset=latin1',
    });
    expect(answer.status).toBe(415);
    expect(json(answer).detail).toContain('latin1');
  });

  it('restricts the media types with `types`', async () => {
    const refused = await post('/json-merge-patch-only', '{"a":1}', JSON_HEADERS);
    expect(refused.status).toBe(415);
    const accepted = await post('/json-merge-patch-only', '{"a":1}', {
      'Content-Type': 'application/merge-patch+json',
    });
    expect(accepted.status).toBe(200);
  });

  it('answers 400 for bytes that are not UTF-8', async () => {
    const bytes = Buffer.concat([
      Buffer.from('{"a":"'),
      Buffer.from([0xff, 0xfe, 0xc3]),
      Buffer.from('"}'),
    ]);
    const answer = await post('/json', bytes, JSON_HEADERS);
    expect(answer.status).toBe(400);
    expect(json(answer).detail).toMatch(/UTF-8/);
  });

  it('answers 400 for invalid JSON, saying where, without echoing the body', async () => {
    const answer = await post('/json', '{"password":"hunter2",}', JSON_HEADERS);
    expect(answer.status).toBe(400);
    expect(answer.headers['content-type']).toBe(PROBLEM_TYPE);
    const body = json(answer);
    expect(body.type).toBe('urn:portico:problem:invalid-json');
    expect(body.detail).toMatch(/line 1, column 23/);
    expect(answer.body).not.toContain('hunter2');
    expect(answer.body).not.toContain('password');
  });

  it('counts lines and columns over several lines', async () => {
    const answer = await post('/json', '{\n "a": 1,\n "b" 2}', JSON_HEADERS);
    expect(answer.status).toBe(400);
    expect(json(answer).detail).toMatch(/line 3, column 6/);
  });

  it('says when the JSON ends too early', async () => {
    const answer = await post('/json', '{"a":', JSON_HEADERS);
    expect(answer.status).toBe(400);
    expect(json(answer).detail).toMatch(/ends too early/);
  });

  it('does not echo the text around an unexpected token', async () => {
    const answer = await post('/json', 'nope-hunter2', JSON_HEADERS);
    expect(answer.status).toBe(400);
    expect(answer.body).not.toContain('hunter2');
    expect(answer.body).not.toContain('nope');
  });

  it('answers 400 for an empty JSON body', async () => {
    const answer = await post('/json', '', JSON_HEADERS);
    expect(answer.status).toBe(400);
  });

  it('returns equal values when read twice', async () => {
    const answer = await post('/json-twice', '{"a":[1,{"b":2}]}', JSON_HEADERS);
    expect(answer.status).toBe(200);
    expect(json(answer)).toEqual({
      first: { a: [1, { b: 2 }] },
      second: { a: [1, { b: 2 }] },
      equal: true,
    });
  });
});

describe('prototype poisoning', () => {
  it('drops __proto__, constructor and prototype keys at every depth', async () => {
    const answer = await post(
      '/json-keys',
      '{"a":1,"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}},' +
        '"nested":{"prototype":1,"ok":2,"__proto__" : {"polluted":true}}}',
      JSON_HEADERS,
    );
    expect(answer.status).toBe(200);
    expect(json(answer)).toEqual({
      keys: ['a', 'nested'],
      nestedKeys: ['ok'],
      ownProto: false,
      plainPrototype: true,
      mergedPolluted: false,
    });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.prototype).not.toHaveProperty('polluted');
  });

  it('keeps ordinary keys that merely contain the words', async () => {
    const answer = await post(
      '/json',
      '{"my_constructor":1,"text":"\\"__proto__\\": is fine in a string"}',
      JSON_HEADERS,
    );
    expect(answer.status).toBe(200);
    expect(json(answer).value).toEqual({
      my_constructor: 1,
      text: '"__proto__": is fine in a string',
    });
  });

  it('drops a __proto__ key spelled with a JSON escape', async () => {
    const answer = await post(
      '/json-keys',
      '{"a":1,"\\u005f_proto__":{"polluted":true}}',
      JSON_HEADERS,
    );
    expect(answer.status).toBe(200);
    const body = json(answer);
    expect(body.keys).toEqual(['a']);
    expect(body.ownProto).toBe(false);
    expect(body.mergedPolluted).toBe(false);
  });
});

describe('body limits', () => {
  it('accepts a body of exactly the default limit', async () => {
    const text = `"${'a'.repeat(DEFAULT_BODY_LIMIT - 2)}"`;
    const answer = await post('/json', text, JSON_HEADERS);
    expect(answer.status).toBe(200);
    expect((json(answer).value as string).length).toBe(DEFAULT_BODY_LIMIT - 2);
  });

  it('answers 413 when Content-Length is over the default 1 MiB', async () => {
    expect(DEFAULT_BODY_LIMIT).toBe(1024 * 1024);
    const text = `"${'a'.repeat(DEFAULT_BODY_LIMIT - 1)}"`;
    const answer = await post('/json', text, JSON_HEADERS);
    expect(answer.status).toBe(413);
    expect(answer.headers['content-type']).toBe(PROBLEM_TYPE);
    expect(json(answer).detail).toContain(String(DEFAULT_BODY_LIMIT));
  });

  it('answers 413 (and does not hang) for a 2 MiB body with Content-Length', async () => {
    const answer = await post('/json', Buffer.alloc(2 * 1024 * 1024, 0x20), JSON_HEADERS);
    expect(answer.status).toBe(413);
    expect(json(answer).status).toBe(413);
  });

  it('answers 413 when a chunked body streams past the limit', async () => {
    const answer = await postChunked('/json', 32, 64 * 1024);
    expect(answer.status).toBe(413);
    expect(json(answer).status).toBe(413);
  });

  it('applies a custom limit, to Content-Length and to chunked bodies', async () => {
    const ok = await post('/json-small', '{"a":"12345678"}', JSON_HEADERS);
    expect(ok.status).toBe(200);
    const tooLarge = await post('/json-small', '{"a":"123456789"}', JSON_HEADERS);
    expect(tooLarge.status).toBe(413);
    expect(json(tooLarge).detail).toContain('16 bytes');
    const chunked = await postChunked('/json-small', 4, 8);
    expect(chunked.status).toBe(413);
  });

  it('keeps serving after a 413', async () => {
    const answer = await post('/json', '{"after":true}', JSON_HEADERS);
    expect(answer.status).toBe(200);
  });

  it('reads a chunked body under the limit', async () => {
    const answer = await postChunked('/raw', 3, 1000, {
      'Content-Type': 'application/octet-stream',
    });
    expect(answer.status).toBe(200);
    expect(json(answer).length).toBe(3000);
  });
});

describe('readForm', () => {
  it('returns URLSearchParams with repeated parameters visible', async () => {
    const answer = await post(
      '/form',
      'grant_type=client_credentials&scope=read&scope=write&note=hello+world%21',
      { 'Content-Type': 'application/x-www-form-urlencoded' },
    );
    expect(answer.status).toBe(200);
    expect(json(answer)).toEqual({
      isParams: true,
      scope: ['read', 'write'],
      grant: 'client_credentials',
      note: 'hello world!',
    });
  });

  it('answers 415 for a JSON body', async () => {
    const answer = await post('/form', '{"a":1}', JSON_HEADERS);
    expect(answer.status).toBe(415);
  });
});

describe('readText', () => {
  it('reads a text/plain body as UTF-8', async () => {
    const answer = await post('/text', 'héllo ✓ wörld', {
      'Content-Type': 'text/plain; charset=utf-8',
    });
    expect(answer.status).toBe(200);
    expect(answer.body).toBe('[héllo ✓ wörld]');
  });

  it('answers 415 for another media type', async () => {
    const answer = await post('/text', 'x', { 'Content-Type': 'text/html' });
    expect(answer.status).toBe(415);
  });
});

describe('content codings (RFC 9110 §8.4, RFC 7694 §3)', () => {
  const gzipped = (text: string) => gzipSync(Buffer.from(text));

  /** A 415 problem that names Content-Encoding and offers `Accept-Encoding: identity`. */
  const expectCodingRefused = (answer: Reply) => {
    expect(answer.status, answer.body).toBe(415);
    expect(answer.headers['content-type']).toBe(PROBLEM_TYPE);
    expect(answer.headers['accept-encoding']).toBe('identity');
    expect(json(answer)).toMatchObject({ status: 415, title: 'Unsupported Media Type' });
    expect(json(answer).detail).toContain('Content-Encoding');
  };

  it.each<[string, string, OutgoingHttpHeaders]>([
    ['/json', '{"a":1}', JSON_HEADERS],
    ['/form', 'a=1', { 'Content-Type': 'application/x-www-form-urlencoded' }],
    ['/text', 'a', { 'Content-Type': 'text/plain' }],
    ['/raw', 'a', {}],
  ])(
    'answers %s with a gzip body by 415 with Accept-Encoding: identity',
    async (path, text, headers) => {
      expectCodingRefused(
        await post(path, gzipped(text), { ...headers, 'Content-Encoding': 'gzip' }),
      );
    },
  );

  it.each(['gzip', 'GZIP', 'deflate', 'br', 'x-custom', 'identity, gzip', 'gzip, identity'])(
    'refuses an uncoded body labelled %s instead of reading it as it is',
    async (coding) => {
      expectCodingRefused(
        await post('/json', '{"a":1}', { ...JSON_HEADERS, 'Content-Encoding': coding }),
      );
    },
  );

  it('refuses before reading: a coded body over the limit is a 415, not a 413', async () => {
    const big = gzipped(JSON.stringify({ pad: randomBytes(64).toString('hex') }));
    expect(big.length).toBeGreaterThan(16);
    expectCodingRefused(
      await post('/json-small', big, { ...JSON_HEADERS, 'Content-Encoding': 'gzip' }),
    );
  });

  it.each(['identity', 'IDENTITY', ' Identity ', 'identity, identity'])(
    'reads a body with Content-Encoding %s',
    async (coding) => {
      const answer = await post('/json', '{"a":1}', {
        ...JSON_HEADERS,
        'Content-Encoding': coding,
      });
      expect(answer.status, answer.body).toBe(200);
      expect(json(answer).value).toEqual({ a: 1 });
    },
  );
});

describe('broken bodies', () => {
  it('answers 500 (not 200) when another parser consumed the body first', async () => {
    logged.length = 0;
    const answer = await post('/consumed', '{"a":1}', JSON_HEADERS);
    expect(answer.status).toBe(500);
    expect(logged).toHaveLength(1);
  });

  it('survives a body cut off mid-way, and serves the next request', async () => {
    let entered!: () => void;
    let settled!: (outcome: unknown) => void;
    const enteredP = new Promise<void>((resolve) => {
      entered = resolve;
    });
    const settledP = new Promise<unknown>((resolve) => {
      settled = resolve;
    });
    aborted = { entered, settled };
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => {});
    socket.write(
      'POST /abort HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n' +
        `Content-Length: 100\r\n\r\n{"text":"${'x'.repeat(40)}`,
    );
    await enteredP;
    socket.destroy();
    const outcome = await settledP;
    aborted = undefined;
    expect(outcome).toBeInstanceOf(HttpError);
    expect((outcome as HttpError).status).toBe(400);

    const next = await post('/json', '{"still":"alive"}', JSON_HEADERS);
    expect(next.status).toBe(200);
    expect(json(next).value).toEqual({ still: 'alive' });
  });
});
