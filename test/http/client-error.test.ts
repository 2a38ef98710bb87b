import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROBLEM_TYPE } from '../../src/core/problem.js';
import { createClientErrorHandler, handleClientError } from '../../src/http/client-error.js';
import { requestId } from '../../src/http/request-id.js';
import { securityHeaders } from '../../src/http/security-headers.js';
import {
  closeAll,
  listen,
  parseReply,
  type RawReply,
  rawRequest,
  request,
} from '../helpers/http.js';

/** Writes raw bytes, then reads everything until the server closes the connection. */
const raw = async (port: number, data: string) =>
  // the server may close while we are still writing a large request
  parseReply(await rawRequest(port, data, { tolerateReset: true }));

async function get(port: number): Promise<{ status: number; body: string }> {
  const { status, body } = await request(port, '/');
  return { status, body };
}

function expectProblem(answer: RawReply, status: number): Record<string, unknown> {
  expect(answer.status).toBe(status);
  expect(answer.headers['content-type']).toBe(PROBLEM_TYPE);
  expect(answer.headers.connection).toBe('close');
  expect(answer.headers['cache-control']).toBe('no-store');
  expect(Number(answer.headers['content-length'])).toBe(Buffer.byteLength(answer.body));
  const body = JSON.parse(answer.body) as Record<string, unknown>;
  expect(body.status).toBe(status);
  expect(body.type).toBe('about:blank');
  expect(typeof body.title).toBe('string');
  expect(typeof body.detail).toBe('string');
  // RFC 9457 §3.1.5: the occurrence, as a URN (the target that failed to parse is not echoed)
  expect(body.instance).toMatch(/^urn:uuid:[0-9a-f-]{36}$/);
  return body;
}

let port: number;
let timeoutPort: number;

async function start(server: Server): Promise<number> {
  server.on('clientError', handleClientError);
  return (await listen(server)).port;
}

beforeAll(async () => {
  port = await start(createServer((_req, res) => res.end('alive')));
  timeoutPort = await start(
    createServer(
      { headersTimeout: 200, requestTimeout: 300, connectionsCheckingInterval: 50 },
      (_req, res) => res.end('alive'),
    ),
  );
});

afterAll(closeAll);

describe('handleClientError', () => {
  it('answers a malformed request line with a 400 problem', async () => {
    const answer = await raw(port, 'GET /a b c\r\n\r\n');
    const body = expectProblem(answer, 400);
    expect(body.title).toBe('Bad Request');
    expect(await get(port)).toEqual({ status: 200, body: 'alive' });
  });

  it.each([
    ['an unknown HTTP version', 'GET / HTTP/9.9\r\n\r\n'],
    ['a header without a colon', 'GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n'],
    ['a bare LF in a header value', 'GET / HTTP/1.1\r\nHost: x\r\nX-A: a\nb\r\n\r\n'],
    ['a bare CR in a header value', 'GET / HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n'],
  ])('answers %s with a 400 problem', async (_name, data) => {
    expectProblem(await raw(port, data), 400);
  });

  it('answers an unknown method with a 501 problem', async () => {
    const body = expectProblem(await raw(port, 'FROB / HTTP/1.1\r\nHost: x\r\n\r\n'), 501);
    expect(body.title).toBe('Not Implemented');
  });

  it('answers headers over 16 KiB with a 431 problem', async () => {
    const answer = await raw(
      port,
      `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20 * 1024)}\r\n\r\n`,
    );
    const body = expectProblem(answer, 431);
    expect(body.title).toBe('Request Header Fields Too Large');
    expect(body.detail).toMatch(/too large/);
  });

  it('answers a request target over 8 KiB with a 414 problem (RFC 9110 §15.5.15)', async () => {
    const answer = await raw(port, `GET /${'a'.repeat(20 * 1024)} HTTP/1.1\r\nHost: x\r\n\r\n`);
    const body = expectProblem(answer, 414);
    expect(body.title).toBe('URI Too Long');
    expect(body.detail).toMatch(/too long/);
    expect(answer.body).not.toContain('aaaa');
    // a long target that fits is not refused
    const fits = await request(port, `/${'b'.repeat(4 * 1024)}`);
    expect(fits.status).toBe(200);
  });

  it('answers many headers adding up to over 16 KiB with a 431 problem', async () => {
    let headers = '';
    for (let i = 0; i < 100; i++) headers += `X-H${i}: ${'b'.repeat(200)}\r\n`;
    expectProblem(await raw(port, `GET / HTTP/1.1\r\nHost: x\r\n${headers}\r\n`), 431);
  });

  it('answers a request whose headers never finish with a 408 problem', async () => {
    const answer = await raw(timeoutPort, 'GET / HTTP/1.1\r\nHost: x\r\nX-Slow: 1\r\n');
    const body = expectProblem(answer, 408);
    expect(body.detail).toMatch(/too long/);
  });

  it('does not echo the offending request', async () => {
    const answer = await raw(port, 'GET /secret-token-xyz b c\r\n\r\n');
    expect(answer.status).toBe(400);
    expect(answer.body).not.toContain('secret-token-xyz');
  });

  it('keeps the server alive for the next requests', async () => {
    for (let i = 0; i < 3; i++) {
      expect((await raw(port, '\x16\x03\x01garbage\r\n\r\n')).status).toBeGreaterThanOrEqual(400);
      expect(await get(port)).toEqual({ status: 200, body: 'alive' });
    }
    expect(await get(timeoutPort)).toEqual({ status: 200, body: 'alive' });
  });
});

describe('createClientErrorHandler', () => {
  let edgePort: number;
  let bareHandler: unknown;

  beforeAll(async () => {
    const server = createServer((_req, res) => res.end('alive'));
    server.on(
      'clientError',
      createClientErrorHandler({ middleware: [requestId(), securityHeaders()] }),
    );
    edgePort = (await listen(server)).port;
    bareHandler = createClientErrorHandler();
  });

  it('puts the headers of its middleware on the answer and quotes the request id', async () => {
    const answer = await raw(edgePort, 'GET /a b c\r\n\r\n');
    const body = expectProblem(answer, 400);
    const id = answer.headers['x-request-id'];
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(body.requestId).toBe(id);
    expect(body.instance).toBe(`urn:uuid:${id}`);
    expect(answer.headers['content-security-policy']).toBe(
      "default-src 'none'; frame-ancestors 'none'",
    );
    expect(answer.headers['x-content-type-options']).toBe('nosniff');
    expect(answer.headers['x-frame-options']).toBe('DENY');
    expect(await get(edgePort)).toEqual({ status: 200, body: 'alive' });
  });

  it('answers 431 the same way, with one Content-Type and one Connection', async () => {
    const text = await rawRequest(
      edgePort,
      `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20 * 1024)}\r\n\r\n`,
      { tolerateReset: true },
    );
    const answer = parseReply(text);
    expectProblem(answer, 431);
    expect(text).toMatch(/\r\nX-Request-ID: /); // the case the middleware set
    expect(text.match(/\r\nContent-Type: /gi)).toHaveLength(1);
    expect(text.match(/\r\nConnection: /gi)).toHaveLength(1);
  });

  it('is handleClientError itself without middleware, and refuses a wrong option', () => {
    expect(bareHandler).toBe(handleClientError);
    expect(createClientErrorHandler({ middleware: [] })).toBe(handleClientError);
    expect(() => createClientErrorHandler({ middleware: 42 as never })).toThrow(/middleware/);
  });

  it('still answers when a middleware throws, with the headers set before', async () => {
    const server = createServer((_req, res) => res.end('alive'));
    server.on(
      'clientError',
      createClientErrorHandler({
        middleware: [
          requestId(),
          () => {
            throw new Error('boom');
          },
        ],
      }),
    );
    const { port: failing } = await listen(server);
    const answer = await raw(failing, 'GET /a b c\r\n\r\n');
    const body = expectProblem(answer, 400);
    expect(body.requestId).toBe(answer.headers['x-request-id']);
  });
});
