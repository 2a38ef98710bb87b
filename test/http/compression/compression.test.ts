// compression() over real sockets: the bytes are decoded with node:zlib and compared with
// what the handler wrote.
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { brotliDecompressSync, gunzipSync, gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import type { Middleware } from '../../../src/core/compose.js';
import { silentLogger } from '../../../src/diagnostics/index.js';
import { readJson, readText } from '../../../src/http/body/body.js';
import { negotiateEncoding } from '../../../src/http/compression/accept-encoding.js';
import { compression, flushResponse } from '../../../src/http/compression/compression.js';
import {
  type BinaryReply,
  closeAll,
  requestBytes as fetchBytes,
  serve as listenOn,
  request,
} from '../../helpers/http.js';

afterEach(closeAll);

/** The body decoded as its `Content-Encoding` says. */
function decoded(reply: BinaryReply): string {
  const coding = reply.headers['content-encoding'];
  if (coding === 'br') return brotliDecompressSync(reply.body).toString('utf8');
  if (coding === 'gzip') return gunzipSync(reply.body).toString('utf8');
  expect(coding).toBeUndefined();
  return reply.body.toString('utf8');
}

const BIG = JSON.stringify({
  items: Array.from({ length: 200 }, (_, i) => ({ id: i, name: `item ${i}` })),
});
const SMALL = JSON.stringify({ ok: true });

/** A handler that sends `body` with `headers` in one `end()`, with its Content-Length. */
function answer(body: string, headers: Record<string, string> = {}, status = 200): Middleware {
  return (_req, res) => {
    res.writeHead(status, {
      'Content-Type': 'application/json; charset=utf-8',
      'Content-Length': String(Buffer.byteLength(body)),
      ...headers,
    });
    res.end(body);
  };
}

const serve = (stack: Middleware[]) => listenOn(stack, { logger: silentLogger });
const AE = (value: string) => ({ 'Accept-Encoding': value });

describe('compression: negotiation', () => {
  it('prefers br, then gzip, and follows q-values', async () => {
    const server = await serve([compression(), answer(BIG)]);
    const cases: [string, string | undefined][] = [
      ['gzip, deflate, br', 'br'],
      ['gzip', 'gzip'],
      ['br;q=0.5, gzip', 'gzip'],
      ['br;q=1, gzip;q=1', 'br'],
      ['*', 'br'],
      ['*;q=0.5, br;q=0', 'gzip'],
      ['deflate', undefined],
      ['identity', undefined],
      ['gzip;q=0.5, identity;q=1', undefined],
      ['br;q=0, gzip;q=0', undefined],
    ];
    for (const [header, coding] of cases) {
      const reply = await fetchBytes(server, '/', AE(header));
      expect(reply.headers['content-encoding'], header).toBe(coding);
      expect(decoded(reply), header).toBe(BIG);
      expect(reply.headers.vary).toBe('Accept-Encoding');
    }
  });

  it('answers identity when every coding and identity are refused (no 406)', async () => {
    const server = await serve([compression(), answer(BIG)]);
    const reply = await fetchBytes(server, '/', AE('br;q=0, gzip;q=0, identity;q=0'));
    expect(reply.status).toBe(200);
    expect(reply.headers['content-encoding']).toBeUndefined();
    expect(reply.body.toString()).toBe(BIG);
  });

  it('sends identity without Accept-Encoding, with Vary all the same', async () => {
    const server = await serve([compression(), answer(BIG)]);
    const reply = await fetchBytes(server, '/');
    expect(reply.headers['content-encoding']).toBeUndefined();
    expect(reply.headers['content-length']).toBe(String(BIG.length));
    expect(reply.headers.vary).toBe('Accept-Encoding');
  });

  it('survives a hostile Accept-Encoding corpus', async () => {
    const server = await serve([compression(), answer(BIG)]);
    const corpus: [string, string | undefined][] = [
      ['gzip;q=5', undefined],
      ['gzip;q=-1', undefined],
      ['gzip;q=0.0001', undefined],
      ['gzip;q=abc', undefined],
      ['gzip;q=', undefined],
      ['gzip;q=1.0001', undefined],
      ['gzip;q=0.5;q=2', undefined],
      ['gzip;level=9', 'gzip'],
      [';;;,,,', undefined],
      [',,gzip,,', 'gzip'],
      ['GZIP', 'gzip'],
      ['g zip, b"r', undefined],
      ['br;q=0.001, gzip;q=0.002', 'gzip'],
      ['\tgzip\t;\tq=0.9', 'gzip'],
      ['identity;q=0, *;q=0', undefined],
      ['br;q=NaN, gzip;q=Infinity', undefined],
      [`${'x,'.repeat(4000)}br`, 'br'],
      [`gzip;q=${'0'.repeat(8000)}`, undefined],
      ['br;q=1, br;q=0', undefined],
      ['\u00e9\u00e9, gzip', 'gzip'],
    ];
    expect(corpus.length).toBeGreaterThanOrEqual(15);
    for (const [header, coding] of corpus) {
      const reply = await fetchBytes(server, '/', AE(header));
      expect(reply.status, header.slice(0, 40)).toBe(200);
      expect(reply.headers['content-encoding'], header.slice(0, 40)).toBe(coding);
      expect(decoded(reply)).toBe(BIG);
    }
  });

  it('negotiates as a pure function, without throwing', () => {
    expect(negotiateEncoding('gzip, br', ['br', 'gzip'])).toBe('br');
    expect(negotiateEncoding('gzip, br', ['gzip', 'br'])).toBe('gzip');
    expect(negotiateEncoding('', ['br', 'gzip'])).toBeUndefined();
    expect(negotiateEncoding(undefined, ['br', 'gzip'])).toBeUndefined();
    expect(negotiateEncoding('*;q=0.1, gzip;q=0', ['br', 'gzip'])).toBe('br');
  });
});

describe('compression: when not to compress', () => {
  it('leaves a body below the threshold alone, with Vary', async () => {
    const server = await serve([compression(), answer(SMALL)]);
    const reply = await fetchBytes(server, '/', AE('br, gzip'));
    expect(reply.headers['content-encoding']).toBeUndefined();
    expect(reply.headers['content-length']).toBe(String(SMALL.length));
    expect(reply.headers.vary).toBe('Accept-Encoding');
    expect(reply.body.toString()).toBe(SMALL);
  });

  it('honours a lower threshold', async () => {
    const server = await serve([compression({ threshold: 0 }), answer(SMALL)]);
    const reply = await fetchBytes(server, '/', AE('gzip'));
    expect(reply.headers['content-encoding']).toBe('gzip');
    expect(decoded(reply)).toBe(SMALL);
  });

  it('leaves a body already encoded alone, without Vary', async () => {
    const coded = gzipSync(BIG);
    const server = await serve([
      compression(),
      (_req, res) => {
        res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' });
        res.end(coded);
      },
    ]);
    const reply = await fetchBytes(server, '/', AE('br, gzip'));
    expect(reply.headers['content-encoding']).toBe('gzip');
    expect(reply.headers.vary).toBeUndefined();
    expect(gunzipSync(reply.body).toString()).toBe(BIG);
  });

  it('does not compress 204, 304, 206 or HEAD, and keeps Vary where a body would vary', async () => {
    const server = await serve([
      compression(),
      (req, res) => {
        const status = Number(req.url?.slice(1));
        if (status === 204 || status === 304) {
          res.writeHead(status, status === 304 ? { ETag: '"v1"' } : {});
          res.end();
          return;
        }
        const headers: Record<string, string> =
          status === 206 ? { 'Content-Range': `bytes 0-${BIG.length - 1}/99999` } : {};
        return answer(BIG, headers, status)(req, res, () => Promise.resolve());
      },
    ]);
    const noContent = await fetchBytes(server, '/204', AE('br'));
    expect(noContent.status).toBe(204);
    expect(noContent.headers['content-encoding']).toBeUndefined();
    expect(noContent.headers.vary).toBeUndefined();
    const notModified = await fetchBytes(server, '/304', AE('br'));
    expect(notModified.status).toBe(304);
    expect(notModified.headers['content-encoding']).toBeUndefined();
    expect(notModified.headers.vary).toBe('Accept-Encoding');
    expect(notModified.headers.etag).toBe('"v1"');
    const partial = await fetchBytes(server, '/206', AE('br'));
    expect(partial.headers['content-encoding']).toBeUndefined();
    expect(partial.headers.vary).toBe('Accept-Encoding');
    expect(partial.body.toString()).toBe(BIG);
    const head = await fetchBytes(server, '/200', AE('br'), 'HEAD');
    expect(head.headers['content-encoding']).toBeUndefined();
    expect(head.headers['content-length']).toBe(String(BIG.length));
    expect(head.headers.vary).toBe('Accept-Encoding');
    expect(head.body.length).toBe(0);
  });

  it('leaves event streams and no-transform alone', async () => {
    const server = await serve([
      compression(),
      (req, res) => {
        if (req.url === '/events') {
          res.writeHead(200, { 'Content-Type': 'text/event-stream' });
          res.end(`data: ${BIG}\n\n`);
          return;
        }
        return answer(BIG, { 'Cache-Control': 'private, no-transform' })(req, res, () =>
          Promise.resolve(),
        );
      },
    ]);
    const events = await fetchBytes(server, '/events', AE('br, gzip'));
    expect(events.headers['content-encoding']).toBeUndefined();
    expect(events.headers.vary).toBeUndefined();
    expect(events.body.toString()).toBe(`data: ${BIG}\n\n`);
    const kept = await fetchBytes(server, '/kept', AE('br, gzip'));
    expect(kept.headers['content-encoding']).toBeUndefined();
    expect(kept.body.toString()).toBe(BIG);
  });

  it('leaves types not worth compressing alone, without Vary', async () => {
    const server = await serve([compression(), answer(BIG, { 'Content-Type': 'image/png' })]);
    const reply = await fetchBytes(server, '/', AE('br, gzip'));
    expect(reply.headers['content-encoding']).toBeUndefined();
    expect(reply.headers.vary).toBeUndefined();
  });

  it('lets `filter` keep a response out (BREACH)', async () => {
    const server = await serve([
      compression({ filter: (_req, res) => !res.hasHeader('Set-Cookie') }),
      (req, res) =>
        answer(BIG, req.url === '/login' ? { 'Set-Cookie': 'sid=secret; HttpOnly' } : {})(
          req,
          res,
          () => Promise.resolve(),
        ),
    ]);
    expect(
      (await fetchBytes(server, '/login', AE('br'))).headers['content-encoding'],
    ).toBeUndefined();
    expect((await fetchBytes(server, '/other', AE('br'))).headers['content-encoding']).toBe('br');
  });
});

describe('compression: a client that takes no coding', () => {
  // without a coding to use, only writeHead is wrapped: every head must come out as it does
  // for a client whose coding is used, Vary included, and every body as the handler wrote it
  const handlers: Record<string, Middleware> = {
    '/json': answer(SMALL),
    '/big': answer(BIG),
    '/png': answer(BIG, { 'Content-Type': 'image/png' }),
    '/events': answer(BIG, { 'Content-Type': 'text/event-stream' }),
    '/kept': answer(BIG, { 'Cache-Control': 'no-transform' }),
    '/coded': answer(BIG, { 'Content-Encoding': 'gzip' }),
    '/206': answer(BIG, { 'Content-Range': `bytes 0-${BIG.length - 1}/99999` }, 206),
    '/implicit': (_req, res) => {
      res.setHeader('Content-Type', 'text/plain');
      res.setHeader('Vary', 'Origin');
      res.end(BIG);
    },
    '/reason': (_req, res) => {
      res.writeHead(201, 'Made', { 'Content-Type': 'application/json' });
      res.end(SMALL);
    },
    '/raw': (_req, res) => {
      res.writeHead(200, ['Content-Type', 'text/html', 'X-Twice', 'a', 'X-Twice', 'b']);
      res.end('<p>hi</p>');
    },
    '/204': (_req, res) => {
      res.writeHead(204);
      res.end();
    },
  };
  const dispatch: Middleware = (req, res, next) => handlers[req.url ?? '']!(req, res, next);
  const framingAside = ({
    'content-length': _length,
    'transfer-encoding': _chunked,
    ...rest
  }: IncomingHttpHeaders) => rest;

  it('sends every head as for a client whose coding is used, Vary included, and the body as written', async () => {
    const server = await serve([compression({ threshold: 1e9 }), dispatch]);
    const expected: Record<string, string | undefined> = {
      '/json': 'Accept-Encoding',
      '/big': 'Accept-Encoding',
      '/png': undefined,
      '/events': undefined,
      '/kept': undefined,
      '/coded': undefined,
      '/206': 'Accept-Encoding',
      '/implicit': 'Origin, Accept-Encoding',
      '/reason': 'Accept-Encoding',
      '/raw': 'Accept-Encoding',
      '/204': undefined,
    };
    for (const [path, vary] of Object.entries(expected)) {
      // a threshold no body reaches: the coding is chosen but never used, the same heads
      const chosen = await fetchBytes(server, path, AE('gzip'));
      for (const headers of [{}, AE('deflate'), AE('identity')]) {
        const reply = await fetchBytes(server, path, headers);
        expect(reply.headers.vary, path).toBe(vary);
        expect(reply.status, path).toBe(chosen.status);
        expect(reply.statusMessage, path).toBe(chosen.statusMessage);
        // framing aside: a body held to learn its size goes with a Content-Length, one whose
        // head went out at once (writeHead without one) is chunked, as node frames it
        expect(framingAside(reply.headers), path).toStrictEqual(
          framingAside({ ...chosen.headers, date: reply.headers.date }),
        );
        expect(reply.body.equals(chosen.body), path).toBe(true);
      }
    }
    const raw = await fetchBytes(server, '/raw');
    expect(raw.headers['x-twice']).toBe('a, b');
    expect(raw.body.toString()).toBe('<p>hi</p>');
    const reason = await fetchBytes(server, '/reason');
    expect([reason.status, reason.statusMessage]).toEqual([201, 'Made']);
  });

  it('reads headersSent true once the head is committed, held or sent, and false before', async () => {
    const seen: Record<string, boolean[]> = {};
    const server = await serve([
      compression(),
      (req, res) => {
        const marks = [res.headersSent];
        res.writeHead(200, { 'Content-Type': 'application/json' }); // no length: held if coded
        marks.push(res.headersSent);
        res.write(BIG.slice(0, 10));
        marks.push(res.headersSent);
        seen[req.headers['accept-encoding'] ?? 'none'] = marks;
        res.end(BIG.slice(10));
      },
    ]);
    const coded = await fetchBytes(server, '/', AE('gzip'));
    expect(coded.headers['content-encoding']).toBe('gzip');
    expect(decoded(coded)).toBe(BIG);
    const plain = await fetchBytes(server, '/');
    expect(plain.body.toString()).toBe(BIG);
    expect(seen).toStrictEqual({ gzip: [false, true, true], none: [false, true, true] });
  });

  it('leaves a second writeHead to node, which refuses it', async () => {
    let second: unknown;
    const server = await serve([
      compression(),
      (_req, res) => {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        try {
          res.writeHead(500);
        } catch (error) {
          second = error;
        }
        res.end(SMALL);
      },
    ]);
    const reply = await fetchBytes(server, '/');
    expect(reply.status).toBe(200);
    expect(reply.headers.vary).toBe('Accept-Encoding');
    expect((second as { code?: string }).code).toBe('ERR_HTTP_HEADERS_SENT');
  });
});

describe('compression: headers of a compressed answer', () => {
  it('sets Content-Encoding, the compressed Content-Length, Vary appended, a weak ETag', async () => {
    const server = await serve([compression(), answer(BIG, { Vary: 'Origin', ETag: '"abc"' })]);
    const reply = await fetchBytes(server, '/', AE('gzip'));
    expect(reply.headers['content-encoding']).toBe('gzip');
    expect(reply.headers['content-length']).toBe(String(reply.body.length));
    expect(reply.body.length).toBeLessThan(BIG.length);
    expect(reply.headers.vary).toBe('Origin, Accept-Encoding');
    expect(reply.headers.etag).toBe('W/"abc"');
    expect(decoded(reply)).toBe(BIG);
  });

  it('keeps a weak ETag as it is', async () => {
    const server = await serve([compression(), answer(BIG, { ETag: 'W/"abc"' })]);
    expect((await fetchBytes(server, '/', AE('br'))).headers.etag).toBe('W/"abc"');
  });

  it('compresses a body given to end() without Content-Length (setHeader style)', async () => {
    const server = await serve([
      compression(),
      (_req, res) => {
        res.setHeader('Content-Type', 'text/html; charset=utf-8');
        res.end(BIG);
      },
    ]);
    const reply = await fetchBytes(server, '/', AE('br'));
    expect(reply.headers['content-encoding']).toBe('br');
    expect(decoded(reply)).toBe(BIG);
  });

  it('rejects unknown and invalid options', () => {
    expect(() => compression({ treshold: 1 } as never)).toThrow(/Did you mean `threshold`/);
    expect(() => compression({ brotliQuality: 12 })).toThrow(/brotliQuality/);
    expect(() => compression({ encodings: ['deflate'] as never })).toThrow(/encodings/);
  });
});

describe('compression: streaming', () => {
  it('delivers many delayed writes compressed and complete', async () => {
    const parts = Array.from({ length: 40 }, (_, i) => `{"line":${i},"pad":"${'x'.repeat(60)}"}\n`);
    const server = await serve([
      compression(),
      async (_req, res) => {
        res.writeHead(200, { 'Content-Type': 'application/x-ndjson' });
        for (const part of parts) {
          res.write(part);
          await new Promise((r) => setTimeout(r, 2));
        }
        res.end();
      },
    ]);
    for (const coding of ['br', 'gzip']) {
      const reply = await fetchBytes(server, '/', AE(coding));
      expect(reply.headers['content-encoding']).toBe(coding);
      expect(reply.headers['transfer-encoding']).toBe('chunked');
      expect(reply.headers['content-length']).toBeUndefined();
      expect(decoded(reply)).toBe(parts.join(''));
    }
  });

  it('sends what was written at once on res.flush()', async () => {
    let release: () => void = () => {};
    const server = await serve([
      compression(),
      (_req, res) => {
        res.writeHead(200, { 'Content-Type': 'text/plain' });
        res.write('first message\n');
        flushResponse(res);
        release = () => res.end('last\n');
      },
    ]);
    const first = await new Promise<Buffer>((resolve, reject) => {
      const req = httpRequest(
        { host: '127.0.0.1', port: server.port, headers: AE('gzip'), agent: false },
        (res) => {
          expect(res.headers['content-encoding']).toBe('gzip');
          res.once('data', (chunk: Buffer) => resolve(chunk));
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(first.length).toBeGreaterThan(0);
    release();
  });

  it('respects backpressure with a 5 MB body', async () => {
    const chunk = Buffer.from(`${'abcdefghij'.repeat(100)}\n`.repeat(64)); // 64 KB
    const count = 80; // ~5 MB
    let falses = 0;
    const server = await serve([
      compression(),
      async (_req, res) => {
        res.writeHead(200, { 'Content-Type': 'text/plain' });
        for (let i = 0; i < count; i++) {
          if (!res.write(chunk)) {
            falses++;
            await new Promise((r) => res.once('drain', r));
          }
        }
        res.end();
      },
    ]);
    const reply = await fetchBytes(server, '/', AE('gzip'));
    const body = gunzipSync(reply.body);
    expect(body.length).toBe(chunk.length * count);
    expect(body.subarray(0, chunk.length).equals(chunk)).toBe(true);
    expect(falses).toBeGreaterThan(0);
  });

  it('tears the compressor down when the client disconnects mid-stream', async () => {
    let closed: () => void = () => {};
    const done = new Promise<void>((resolve) => {
      closed = resolve;
    });
    const server = await serve([
      compression(),
      (req, res) => {
        if (req.url === '/ok') return answer(BIG)(req, res, () => Promise.resolve());
        res.writeHead(200, { 'Content-Type': 'text/plain' });
        const timer = setInterval(() => {
          res.write('x'.repeat(2048));
          (res as typeof res & { flush(): void }).flush();
        }, 5);
        res.on('close', () => {
          setTimeout(() => {
            clearInterval(timer);
            closed();
          }, 30);
        });
      },
    ]);
    await new Promise<void>((resolve, reject) => {
      const req = httpRequest(
        { host: '127.0.0.1', port: server.port, headers: AE('br'), agent: false },
        (res) => {
          res.once('data', () => {
            req.destroy();
            resolve();
          });
        },
      );
      req.on('close', resolve);
      req.on('error', reject);
      req.end();
    });
    await done;
    const after = await fetchBytes(server, '/ok', AE('gzip'));
    expect(decoded(after)).toBe(BIG); // the server goes on, nothing thrown
  });
});

describe('request bodies with a content coding are still refused', () => {
  it('answers 415 to a gzip body, even one that expands 1000×, without decoding it', async () => {
    let reached = false;
    const server = await serve([
      compression(),
      async (req, res) => {
        const value = req.url === '/text' ? await readText(req) : await readJson(req);
        reached = true;
        res.end(JSON.stringify(value));
      },
    ]);
    const bomb = gzipSync(Buffer.alloc(10 * 1024 * 1024, 0x20)); // 10 MB of spaces, ~10 KB sent
    expect(bomb.length * 500).toBeLessThan(10 * 1024 * 1024);
    for (const path of ['/json', '/text']) {
      const reply = await request(server, path, {
        method: 'POST',
        headers: {
          'Content-Type': path === '/json' ? 'application/json' : 'text/plain',
          'Content-Encoding': 'gzip',
          'Accept-Encoding': 'gzip',
        },
        body: bomb,
      });
      expect(reply.status).toBe(415);
      expect(reply.headers['accept-encoding']).toBe('identity');
    }
    expect(reached).toBe(false);
  });
});
