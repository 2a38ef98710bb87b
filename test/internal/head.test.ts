// The response head portico owns (src/internal/head.ts), over real sockets: its lines go out in
// one writeHead, and whatever a handler does with node's own header API sees them, as if each
// had been set with setHeader: the same bytes, the last writer winning, nothing lost or doubled.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { toNodeListener } from '../../src/adapters/node.js';
import { sendJson } from '../../src/core/send.js';
import { compression } from '../../src/http/compression/compression.js';
import { requestId } from '../../src/http/request-id.js';
import { securityHeaders } from '../../src/http/security-headers.js';
import { addHeadSegment, headLine, headSegment, setHeadLine } from '../../src/internal/head.js';
import { closeAll, listen, parseReply, rawRequest } from '../helpers/http.js';

afterEach(closeAll);

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** The raw reply of one `GET /` to a server running `handler`. */
async function rawReply(handler: Handler) {
  const { port } = await listen((req, res) => {
    try {
      handler(req, res);
    } catch (err) {
      res.statusCode = 599;
      res.end(String(err));
    }
  });
  const text = await rawRequest(port, 'GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
  return parseReply(text);
}

/** The header lines but Date (which differs from one answer to the next). */
const withoutDate = (lines: readonly string[]) => lines.filter((l) => !l.startsWith('Date:'));

const SECURITY = headSegment([
  ['Content-Security-Policy', "default-src 'none'"],
  ['X-Content-Type-Options', 'nosniff'],
]);

describe('the response head', () => {
  it('writes the same bytes as one setHeader per line', async () => {
    const viaHead = await rawReply((_req, res) => {
      setHeadLine(res, 'X-Request-ID', 'x-request-id', 'r1');
      addHeadSegment(res, SECURITY);
      setHeadLine(res, 'Vary', 'vary', 'Origin');
      res.setHeader('Content-Type', 'text/plain');
      res.end('hi');
    });
    const viaSetHeader = await rawReply((_req, res) => {
      res.setHeader('X-Request-ID', 'r1');
      res.setHeader('Content-Security-Policy', "default-src 'none'");
      res.setHeader('X-Content-Type-Options', 'nosniff');
      res.setHeader('Vary', 'Origin');
      res.setHeader('Content-Type', 'text/plain');
      res.end('hi');
    });
    expect(withoutDate(viaHead.lines)).toEqual(withoutDate(viaSetHeader.lines));
    expect(viaHead.body).toBe('hi');
  });

  it('writes its lines in order before what writeHead is given, which wins by name', async () => {
    const reply = await rawReply((_req, res) => {
      setHeadLine(res, 'X-Request-ID', 'x-request-id', 'r1');
      addHeadSegment(res, SECURITY);
      res.writeHead(201, { 'X-Content-Type-Options': 'other', 'Content-Length': 0 });
      res.end();
    });
    expect(reply.status).toBe(201);
    expect(withoutDate(reply.lines).slice(0, 4)).toEqual([
      'X-Request-ID: r1',
      "Content-Security-Policy: default-src 'none'",
      'X-Content-Type-Options: other',
      'Content-Length: 0',
    ]);
  });

  it('takes a raw array, a reason phrase and pairs in writeHead', async () => {
    const flat = await rawReply((_req, res) => {
      setHeadLine(res, 'X-A', 'x-a', '1');
      res.writeHead(200, 'Fine', ['X-B', '2', 'Content-Length', '0']);
      res.end();
    });
    expect(flat.statusLine).toBe('HTTP/1.1 200 Fine');
    expect(withoutDate(flat.lines).slice(0, 3)).toEqual(['X-A: 1', 'X-B: 2', 'Content-Length: 0']);
    const pairs = await rawReply((_req, res) => {
      setHeadLine(res, 'X-A', 'x-a', '1');
      res.writeHead(200, [
        ['x-a', '3'],
        ['Content-Length', '0'],
      ] as unknown as string[]);
      res.end();
    });
    expect(pairs.headers['x-a']).toBe('3');
    expect(pairs.lines.filter((l) => l.toLowerCase().startsWith('x-a:'))).toHaveLength(1);
  });

  it('lets the last writer win: a line after setHeader, setHeader after a line', async () => {
    const reply = await rawReply((_req, res) => {
      res.setHeader('X-Frame-Options', 'SAMEORIGIN');
      setHeadLine(res, 'X-Frame-Options', 'x-frame-options', 'DENY'); // later: wins
      addHeadSegment(res, SECURITY);
      res.setHeader('content-security-policy', 'sandbox'); // later: wins
      res.end();
    });
    expect(reply.headers['x-frame-options']).toBe('DENY');
    expect(reply.headers['content-security-policy']).toBe('sandbox');
    const names = reply.lines.map((l) => l.slice(0, l.indexOf(':')).toLowerCase());
    expect(names.filter((n) => n === 'x-frame-options')).toHaveLength(1);
    expect(names.filter((n) => n === 'content-security-policy')).toHaveLength(1);
  });

  it('is read and changed through node’s own header API', async () => {
    const seen: unknown[] = [];
    const reply = await rawReply((_req, res) => {
      addHeadSegment(res, SECURITY);
      setHeadLine(res, 'Vary', 'vary', 'Origin');
      res.setHeader('X-Own', 'own');
      seen.push(
        res.getHeader('x-content-type-options'),
        res.hasHeader('Content-Security-Policy'),
        res.hasHeader('X-Missing'),
        res.getHeaderNames(),
        { ...res.getHeaders() },
        (res as unknown as { getRawHeaderNames(): string[] }).getRawHeaderNames(),
      );
      res.removeHeader('Content-Security-Policy');
      res.appendHeader('Vary', 'Accept');
      seen.push(res.hasHeader('content-security-policy'), res.getHeader('vary'));
      res.end();
      seen.push(res.getHeader('x-content-type-options'), res.headersSent);
    });
    expect(seen).toEqual([
      'nosniff',
      true,
      false,
      ['x-own', 'content-security-policy', 'x-content-type-options', 'vary'],
      {
        'x-own': 'own',
        'content-security-policy': "default-src 'none'",
        'x-content-type-options': 'nosniff',
        vary: 'Origin',
      },
      ['X-Own', 'Content-Security-Policy', 'X-Content-Type-Options', 'Vary'],
      false,
      ['Origin', 'Accept'],
      'nosniff',
      true,
    ]);
    expect(reply.headers['content-security-policy']).toBeUndefined();
    expect(reply.lines.filter((l) => l.startsWith('Vary:'))).toEqual([
      'Vary: Origin',
      'Vary: Accept',
    ]);
  });

  it('leaves a response whose writeHead was wrapped before it to setHeader', async () => {
    const given: unknown[] = [];
    const reply = await rawReply((_req, res) => {
      const original = res.writeHead;
      res.writeHead = function wrapped(this: ServerResponse, ...args: unknown[]) {
        given.push(args);
        this.setHeader('X-Wrapped', 'yes');
        return (original as (...a: unknown[]) => ServerResponse).apply(this, args);
      } as ServerResponse['writeHead'];
      addHeadSegment(res, SECURITY);
      res.writeHead(200, { 'Content-Length': 0 });
      res.end();
    });
    expect(given).toEqual([[200, { 'Content-Length': 0 }]]);
    expect(reply.headers).toMatchObject({
      'x-wrapped': 'yes',
      'x-content-type-options': 'nosniff',
      'content-length': '0',
    });
  });

  it('is joined by a writeHead wrapper installed after it (as compression does)', async () => {
    const reply = await rawReply((_req, res) => {
      addHeadSegment(res, SECURITY);
      const headWriteHead = res.writeHead;
      res.writeHead = function wrapped(this: ServerResponse, ...args: unknown[]) {
        this.setHeader('Content-Encoding', 'identity');
        return (headWriteHead as (...a: unknown[]) => ServerResponse).apply(this, args);
      } as ServerResponse['writeHead'];
      res.end('x');
    });
    expect(reply.headers).toMatchObject({
      'content-encoding': 'identity',
      'x-content-type-options': 'nosniff',
    });
    expect(reply.body).toBe('x');
  });

  it('falls back to setHeader once the head is written', async () => {
    let thrown: unknown;
    await rawReply((_req, res) => {
      addHeadSegment(res, SECURITY);
      res.writeHead(200, { 'Content-Length': 0 });
      try {
        setHeadLine(res, 'X-Late', 'x-late', '1');
      } catch (err) {
        thrown = err;
      }
      res.end();
    });
    expect((thrown as NodeJS.ErrnoException).code).toBe('ERR_HTTP_HEADERS_SENT');
  });

  it('leaves node’s own store empty when nothing else set a field: its fast path', async () => {
    const stores: unknown[] = [];
    const reply = await rawReply((_req, res) => {
      setHeadLine(res, 'X-Request-ID', 'x-request-id', 'r1');
      addHeadSegment(res, SECURITY);
      sendJson(res, 200, { ok: true });
      const key = Object.getOwnPropertySymbols(res).find((k) => k.description === 'kOutHeaders');
      stores.push(key === undefined ? 'no store' : (res as never)[key]);
    });
    expect(stores).toEqual([null]);
    expect(reply.headers).toMatchObject({
      'x-request-id': 'r1',
      'x-content-type-options': 'nosniff',
      'content-type': 'application/json; charset=utf-8',
      'content-length': '11',
    });
    expect(reply.body).toBe('{"ok":true}');
  });

  it('keeps its lines under compression() made after it, compressed or not', async () => {
    const { port } = await listen(
      toNodeListener([
        requestId({ generate: () => 'r1' }),
        compression(),
        securityHeaders(),
        (_req, res) => sendJson(res, 200, { text: 'x'.repeat(2000) }),
      ]),
    );
    for (const coding of ['gzip', 'identity']) {
      const reply = parseReply(
        await rawRequest(
          port,
          `GET / HTTP/1.1\r\nHost: x\r\nAccept-Encoding: ${coding}\r\nConnection: close\r\n\r\n`,
        ),
      );
      expect(reply.headers, coding).toMatchObject({
        'x-request-id': 'r1',
        'x-frame-options': 'DENY',
        vary: 'Accept-Encoding',
      });
      expect(reply.headers['content-encoding']).toBe(coding === 'gzip' ? 'gzip' : undefined);
    }
  });

  it('runs compression’s Vary hook with what writeHead was given, no wrapper per response', async () => {
    const writeHeads: unknown[] = [];
    const { port } = await listen(
      toNodeListener([
        requestId({ generate: () => 'r1' }),
        compression(),
        (_req, res) => {
          writeHeads.push(res.writeHead);
          res.writeHead(200, [
            ['Content-Type', 'text/html'],
            ['Set-Cookie', 'a=1'],
            ['Set-Cookie', 'b=2'],
          ]);
          res.end('x');
        },
      ]),
    );
    const replies = [];
    for (let i = 0; i < 2; i++) {
      const text = await rawRequest(
        port,
        'GET / HTTP/1.1\r\nHost: x\r\nAccept-Encoding: identity\r\nConnection: close\r\n\r\n',
      );
      replies.push(text);
    }
    expect(writeHeads[0]).toBe(writeHeads[1]); // the head's shared writeHead, no closure
    const lines = withoutDate(parseReply(replies[0]!).lines);
    expect(lines).toEqual([
      'X-Request-ID: r1',
      'Content-Type: text/html',
      'Set-Cookie: a=1',
      'Set-Cookie: b=2',
      'Vary: Accept-Encoding',
      'Connection: close',
      'Transfer-Encoding: chunked',
    ]);
  });

  it('answers headLine for its own lines only', async () => {
    const seen: unknown[] = [];
    await rawReply((_req, res) => {
      seen.push(headLine(res, 'vary'));
      setHeadLine(res, 'Vary', 'vary', 'Origin');
      seen.push(headLine(res, 'vary'), headLine(res, 'x-none'));
      res.end();
    });
    expect(seen).toEqual([undefined, 'Origin', undefined]);
  });
});
