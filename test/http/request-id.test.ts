import type { OutgoingHttpHeaders } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Middleware } from '../../src/core/compose.js';
import { getRequestId } from '../../src/core/context.js';
import { silentLogger } from '../../src/diagnostics/index.js';
import { REQUEST_ID_PATTERN, requestId } from '../../src/http/request-id.js';
import { closeAll, parseReply, rawRequest, request, serve } from '../helpers/http.js';

/** GETs `path` from `port` with `headers`. */
const call = (port: number, headers: OutgoingHttpHeaders = {}, path = '/') =>
  request(port, path, { headers });

/** Sends raw bytes and parses the one answer the server writes before it closes. */
async function raw(port: number, head: string) {
  const { statusLine, lines, body } = parseReply(await rawRequest(port, head));
  return { statusLine, headers: lines.map((l) => l.toLowerCase()), body };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** Answers with the id the handler sees through getRequestId(). */
const showId: Middleware = (req, res) => {
  res.setHeader('Content-Type', 'text/plain');
  res.end(getRequestId(req) ?? '(none)');
};

/** Serves `mw` then `showId`; answers the port. */
const start = async (mw: Middleware) => (await serve([mw, showId], { logger: silentLogger })).port;

let defaults: number;
let untrusting: number;
let customHeader: number;
let customGenerator: number;
let generated = 0;

beforeAll(async () => {
  defaults = await start(requestId());
  untrusting = await start(requestId({ trustIncoming: false }));
  customHeader = await start(requestId({ header: 'X-Correlation-ID' }));
  customGenerator = await start(
    requestId({
      generate: () => {
        generated++;
        return `gen-${generated}`;
      },
    }),
  );
});

afterAll(closeAll);

describe('requestId()', () => {
  it('generates a UUID when the caller sends none, and the handler sees it', async () => {
    const answer = await call(defaults);
    const id = answer.headers['x-request-id'];
    expect(id).toMatch(UUID);
    expect(answer.body).toBe(id);
  });

  it('gives each request its own id', async () => {
    const ids = new Set<string>();
    for (let i = 0; i < 5; i++) ids.add(String((await call(defaults)).headers['x-request-id']));
    expect(ids.size).toBe(5);
  });

  it.each([
    ['a simple token', 'abc-123'],
    ['every allowed character', 'AZaz09._:-'],
    ['one character', 'x'],
    ['200 characters', 'a'.repeat(200)],
    ['a UUID', '0f8fad5b-d9cb-469f-a165-70867728950e'],
  ])('keeps a caller id that is %s', async (_name, id) => {
    const answer = await call(defaults, { 'X-Request-ID': id });
    expect(answer.headers['x-request-id']).toBe(id);
    expect(answer.body).toBe(id);
  });

  it.each([
    ['empty', ''],
    ['201 characters', 'a'.repeat(201)],
    ['with spaces', 'has space'],
    ['with a slash', 'a/b'],
    ['with a comma', 'a,b'],
    ['with a quote', 'a"b'],
    ['with latin-1', 'caf\u00e9'],
    ['with a tab', 'a\tb'],
    ['percent-encoded CR/LF', 'a%0d%0aSet-Cookie:%20x=1'],
  ])('replaces a caller id that is %s', async (_name, id) => {
    const answer = await call(defaults, { 'X-Request-ID': id });
    const given = answer.headers['x-request-id'];
    expect(given).toMatch(UUID);
    expect(given).not.toBe(id);
    expect(answer.body).toBe(given);
    expect(answer.headers['set-cookie']).toBeUndefined();
  });

  it('matches the documented pattern', () => {
    expect(REQUEST_ID_PATTERN.test('a'.repeat(200))).toBe(true);
    expect(REQUEST_ID_PATTERN.test('a'.repeat(201))).toBe(false);
    expect(REQUEST_ID_PATTERN.test('')).toBe(false);
    expect(REQUEST_ID_PATTERN.test('abc\n')).toBe(false);
  });
});

describe('requestId() against raw sockets', () => {
  it('replaces UTF-8 bytes', async () => {
    const answer = await raw(
      defaults,
      'GET / HTTP/1.1\r\nHost: x\r\nX-Request-ID: h\u00e9llo-\u2713\r\nConnection: close\r\n\r\n',
    );
    expect(answer.statusLine).toBe('HTTP/1.1 200 OK');
    const idLine = answer.headers.find((h) => h.startsWith('x-request-id:'));
    expect(idLine?.slice('x-request-id: '.length)).toMatch(UUID);
  });

  it('never turns a CRLF in the id into a response header', async () => {
    const answer = await raw(
      defaults,
      'GET / HTTP/1.1\r\nHost: x\r\nX-Request-ID: a\r\nSet-Cookie: session=evil\r\n' +
        'Connection: close\r\n\r\n',
    );
    // the CRLF ends the header line: the id is "a", the rest is a separate request header
    expect(answer.statusLine).toBe('HTTP/1.1 200 OK');
    expect(answer.headers).toContain('x-request-id: a');
    expect(answer.headers.some((h) => h.startsWith('set-cookie'))).toBe(false);
    expect(answer.body).toBe('a');
  });

  it.each([
    ['a bare LF', 'a\nSet-Cookie: session=evil'],
    ['a bare CR', 'a\rSet-Cookie: session=evil'],
    ['an obsolete line fold', 'a\r\n Set-Cookie: session=evil'],
  ])('refuses or sanitises %s', async (_name, value) => {
    const answer = await raw(
      defaults,
      `GET / HTTP/1.1\r\nHost: x\r\nX-Request-ID: ${value}\r\nConnection: close\r\n\r\n`,
    );
    expect(answer.statusLine).toMatch(/^HTTP\/1\.1 (200|400) /);
    expect(answer.headers.some((h) => h.startsWith('set-cookie'))).toBe(false);
    const idLine = answer.headers.find((h) => h.startsWith('x-request-id:'));
    if (idLine !== undefined)
      expect(idLine.slice('x-request-id: '.length)).toMatch(REQUEST_ID_PATTERN);
  });

  it('replaces repeated X-Request-ID headers (joined with a comma)', async () => {
    const answer = await raw(
      defaults,
      'GET / HTTP/1.1\r\nHost: x\r\nX-Request-ID: a\r\nX-Request-ID: b\r\nConnection: close\r\n\r\n',
    );
    const idLine = answer.headers.find((h) => h.startsWith('x-request-id:'));
    expect(idLine?.slice('x-request-id: '.length)).toMatch(UUID);
  });

  it('keeps serving after the attempts', async () => {
    const answer = await call(defaults, { 'X-Request-ID': 'still-up' });
    expect(answer.body).toBe('still-up');
  });
});

describe('options', () => {
  it('trustIncoming: false always makes a new id', async () => {
    const answer = await call(untrusting, { 'X-Request-ID': 'abc-123' });
    expect(answer.headers['x-request-id']).toMatch(UUID);
    expect(answer.body).toBe(answer.headers['x-request-id']);
  });

  it('reads and writes a custom header name', async () => {
    const kept = await call(customHeader, {
      'X-Correlation-ID': 'corr-1',
      'X-Request-ID': 'rid-1',
    });
    expect(kept.headers['x-correlation-id']).toBe('corr-1');
    expect(kept.headers['x-request-id']).toBeUndefined();
    expect(kept.body).toBe('corr-1');

    const ignored = await call(customHeader, { 'X-Request-ID': 'rid-1' });
    expect(ignored.headers['x-correlation-id']).toMatch(UUID);
    expect(ignored.body).toBe(ignored.headers['x-correlation-id']);
  });

  it('uses a custom generator when the caller id is missing or refused', async () => {
    const before = generated;
    const none = await call(customGenerator);
    expect(none.headers['x-request-id']).toBe(`gen-${before + 1}`);
    const refused = await call(customGenerator, { 'X-Request-ID': 'bad id' });
    expect(refused.headers['x-request-id']).toBe(`gen-${before + 2}`);
    expect(refused.body).toBe(`gen-${before + 2}`);
    const kept = await call(customGenerator, { 'X-Request-ID': 'good-id' });
    expect(kept.headers['x-request-id']).toBe('good-id');
    expect(generated).toBe(before + 2);
  });

  it('throws a TypeError hinting at `header` for a typo', () => {
    expect(() => requestId({ heder: 'x' } as never)).toThrow(TypeError);
    expect(() => requestId({ heder: 'x' } as never)).toThrow(/header/);
    expect(() => requestId({ heder: 'x' } as never)).toThrow(/heder/);
  });

  it('hints at trustIncoming for a near miss', () => {
    expect(() => requestId({ trustIncomming: false } as never)).toThrow(/trustIncoming/);
  });

  it('throws a TypeError for an invalid header name', () => {
    expect(() => requestId({ header: 'X Request ID' })).toThrow(TypeError);
    expect(() => requestId({ header: 'X-Id\r\n' })).toThrow(TypeError);
    expect(() => requestId({ header: '' })).toThrow(TypeError);
  });
});
