// serveStatic over real sockets: media types, validators, ranges on a file of a few MB, and a
// traversal corpus that must never reach outside the root.
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { send } from '../../../src/core/send.js';
import { silentLogger } from '../../../src/diagnostics/index.js';
import { serveStatic } from '../../../src/http/representation/static-files.js';
import {
  closeAll,
  requestBytes as get,
  type Listening,
  parseReply,
  rawRequest,
  serve,
} from '../../helpers/http.js';

const SECRET = 'TOP SECRET outside the root';
const BIG = randomBytes(3 * 1024 * 1024 + 123);
const dir = mkdtempSync(join(tmpdir(), 'portico-static-'));
const root = join(dir, 'public');
let plain: Listening;
let withFallback: Listening;
let strict: Listening;
let prefixed: Listening;

function setUp(): void {
  mkdirSync(join(root, 'sub'), { recursive: true });
  mkdirSync(join(root, '.hidden'));
  writeFileSync(join(dir, 'secret.txt'), SECRET);
  writeFileSync(join(root, 'index.html'), '<h1>home</h1>');
  writeFileSync(join(root, 'hello.txt'), 'hello, world\n');
  writeFileSync(join(root, 'style.css'), 'body{}');
  writeFileSync(join(root, 'app.js'), 'export {}');
  writeFileSync(join(root, 'data.json'), '{"a":1}');
  writeFileSync(join(root, 'logo.PNG'), Buffer.from([0x89, 0x50, 0x4e, 0x47]));
  writeFileSync(join(root, 'font.woff2'), 'w');
  writeFileSync(join(root, 'mod.wasm'), 'w');
  writeFileSync(join(root, 'noext'), 'x');
  writeFileSync(join(root, 'space name.txt'), 'spaced');
  writeFileSync(join(root, 'big.bin'), BIG);
  writeFileSync(join(root, '.env'), SECRET);
  writeFileSync(join(root, '.hidden', 'secret.txt'), SECRET);
  writeFileSync(join(root, 'sub', 'index.html'), '<h1>sub</h1>');
  symlinkSync(join(dir, 'secret.txt'), join(root, 'escape'));
  symlinkSync(dir, join(root, 'outdir'));
  symlinkSync(join(root, '.env'), join(root, 'dotlink'));
  symlinkSync(join(root, 'hello.txt'), join(root, 'inside-link.txt'));
}

beforeAll(async () => {
  setUp();
  const fallback = (_req: unknown, res: Parameters<typeof send>[0]) => send(res, 200, 'fallback');
  plain = await serve(serveStatic(root), { logger: silentLogger });
  withFallback = await serve([serveStatic(pathToFileURL(`${root}/`)), fallback]);
  strict = await serve(
    serveStatic(root, {
      fallthrough: false,
      index: false,
      cacheControl: 'public, max-age=60',
      headers: { 'X-Served-By': 'static' },
      types: { '.txt': 'text/x-custom' },
    }),
  );
  prefixed = await serve([serveStatic(root, { prefix: '/assets/' }), fallback]);
});

afterAll(async () => {
  await closeAll();
  rmSync(dir, { recursive: true, force: true });
});

describe('serveStatic: the traversal corpus', () => {
  // 400: a path readers could take apart differently (dot segments, encoded / or \\, `//`),
  // refused by getPathname() before any file is looked for; 404: a path that reads one way only
  const corpus: [string, 400 | 404][] = [
    ['/../secret.txt', 400],
    ['/%2e%2e/secret.txt', 400],
    ['/%2E%2E/secret.txt', 400],
    ['/..%2fsecret.txt', 400],
    ['/..%2Fsecret.txt', 400],
    ['/%2e%2e%2fsecret.txt', 400],
    ['/sub/../../secret.txt', 400],
    ['/sub/%2e%2e/%2e%2e/secret.txt', 400],
    ['/..\\secret.txt', 400],
    ['/..%5csecret.txt', 400],
    ['/%5c..%5csecret.txt', 400],
    ['/hello.txt%00.html', 400],
    ['/%00', 400],
    ['//etc/passwd', 400],
    ['/%2fetc%2fpasswd', 400],
    [`/${encodeURIComponent(join(dir, 'secret.txt'))}`, 400],
    ['/C:%5cWindows%5cwin.ini', 400],
    ['/escape', 404],
    ['/outdir/secret.txt', 404],
    ['/outdir', 404],
    ['/outdir/', 404],
    ['/.env', 404],
    ['/%2eenv', 404],
    ['/.hidden/secret.txt', 404],
    ['/dotlink', 404],
    ['/./hello.txt', 400],
    ['/%ff%fe', 400],
    ['/%%32%65%%32%65/secret.txt', 400],
    ['/%252e%252e/secret.txt', 404],
    ['http://evil.example/../secret.txt', 400],
  ];

  it('has at least 15 attempts', () => expect(corpus.length).toBeGreaterThanOrEqual(15));

  it.each(corpus)('%s → %i', async (path, status) => {
    const reply = await get(plain, path);
    expect(reply.status).toBe(status);
    expect(reply.headers['content-type']).toBe('application/problem+json');
    expect(reply.body.toString()).not.toContain('SECRET');
  });

  it('refuses the same attempts written raw on the wire', async () => {
    for (const target of ['/../secret.txt', '/..\\secret.txt', '/sub/..%2f..%2fsecret.txt']) {
      const text = await rawRequest(
        plain.port,
        `GET ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
      );
      const reply = parseReply(text);
      expect([400, 404]).toContain(reply.status);
      expect(reply.body).not.toContain('SECRET');
    }
  });
});

describe('serveStatic', () => {
  it.each([
    ['/hello.txt', 'text/plain; charset=utf-8'],
    ['/index.html', 'text/html; charset=utf-8'],
    ['/style.css', 'text/css; charset=utf-8'],
    ['/app.js', 'text/javascript; charset=utf-8'],
    ['/data.json', 'application/json; charset=utf-8'],
    ['/logo.PNG', 'image/png'],
    ['/font.woff2', 'font/woff2'],
    ['/mod.wasm', 'application/wasm'],
    ['/noext', 'application/octet-stream'],
    ['/space%20name.txt', 'text/plain; charset=utf-8'],
    ['/inside-link.txt', 'text/plain; charset=utf-8'],
  ])('serves %s as %s', async (path, type) => {
    const reply = await get(plain, path);
    expect(reply.status).toBe(200);
    expect(reply.headers['content-type']).toBe(type);
    expect(reply.headers['cache-control']).toBe('no-cache');
    expect(reply.headers['accept-ranges']).toBe('bytes');
    expect(reply.headers.etag).toMatch(/^"[0-9a-f]+-[0-9a-f]+"$/);
    expect(reply.headers['last-modified']).toMatch(/ GMT$/);
    expect(reply.headers['content-length']).toBe(String(reply.body.length));
  });

  it('serves index.html for a directory, and redirects to add the slash', async () => {
    expect((await get(plain, '/')).body.toString()).toBe('<h1>home</h1>');
    expect((await get(plain, '/sub/')).body.toString()).toBe('<h1>sub</h1>');
    const redirect = await get(plain, '/sub?x=1');
    expect(redirect.status).toBe(308);
    expect(redirect.headers.location).toBe('/sub/?x=1');
    const twice = await get(plain, '//sub'); // an empty segment: refused, not guessed
    expect(twice.status).toBe(400);
  });

  it('answers 304 to a matching If-None-Match, and HEAD like GET', async () => {
    const first = await get(plain, '/hello.txt');
    const again = await get(plain, '/hello.txt', { 'If-None-Match': first.headers.etag! });
    expect(again.status).toBe(304);
    const head = await get(plain, '/hello.txt', {}, 'HEAD');
    expect(head.status).toBe(200);
    expect(head.body.length).toBe(0);
    expect(head.headers['content-length']).toBe(first.headers['content-length']);
    expect(head.headers.etag).toBe(first.headers.etag);
  });

  it('passes other methods, missing files and a file URL root on to next()', async () => {
    expect((await get(withFallback, '/hello.txt')).body.toString()).toBe('hello, world\n');
    expect((await get(withFallback, '/hello.txt', {}, 'POST')).body.toString()).toBe('fallback');
    expect((await get(withFallback, '/nope.txt')).body.toString()).toBe('fallback');
    expect((await get(withFallback, '/.env')).body.toString()).toBe('fallback');
    expect((await get(withFallback, '/hello.txt/')).body.toString()).toBe('fallback');
  });

  it('throws a 404 with fallthrough: false, and applies its header options', async () => {
    const missing = await get(strict, '/nope.txt');
    expect(missing.status).toBe(404);
    expect(missing.headers['content-type']).toBe('application/problem+json');
    expect((await get(strict, '/')).status).toBe(404); // index: false
    const file = await get(strict, '/hello.txt');
    expect(file.headers['cache-control']).toBe('public, max-age=60');
    expect(file.headers['x-served-by']).toBe('static');
    expect(file.headers['content-type']).toBe('text/x-custom');
  });

  it('serves under a prefix only', async () => {
    expect((await get(prefixed, '/assets/hello.txt')).body.toString()).toBe('hello, world\n');
    expect((await get(prefixed, '/hello.txt')).body.toString()).toBe('fallback');
    expect((await get(prefixed, '/assetshello.txt')).body.toString()).toBe('fallback');
    expect((await get(prefixed, '/assets')).headers.location).toBe('/assets/');
  });

  it('rejects bad options once', () => {
    expect(() => serveStatic(root, { fallthru: true } as never)).toThrow(
      /Did you mean `fallthrough`/,
    );
    expect(() => serveStatic(root, { index: '../x' })).toThrow(TypeError);
    expect(() => serveStatic(root, { prefix: 'assets' })).toThrow(TypeError);
    expect(() => serveStatic(root, { cacheControl: 'a\r\nb' })).toThrow(TypeError);
  });
});

describe('serveStatic: a file of a few MB by ranges', () => {
  it('streams the whole file', async () => {
    const reply = await get(plain, '/big.bin');
    expect(reply.status).toBe(200);
    expect(reply.headers['content-length']).toBe(String(BIG.length));
    expect(reply.body.equals(BIG)).toBe(true);
  });

  it.each([
    ['bytes=1000000-2000000', 1_000_000, 2_000_000],
    ['bytes=-65536', BIG.length - 65_536, BIG.length - 1],
    ['bytes=3000000-', 3_000_000, BIG.length - 1],
  ])('serves %s', async (range, start, end) => {
    const reply = await get(plain, '/big.bin', { Range: range });
    expect(reply.status).toBe(206);
    expect(reply.headers['content-range']).toBe(`bytes ${start}-${end}/${BIG.length}`);
    expect(reply.body.equals(BIG.subarray(start, end + 1))).toBe(true);
  });

  it('serves several ranges as multipart/byteranges', async () => {
    const reply = await get(plain, '/big.bin', { Range: 'bytes=3000000-3000099,0-99999,-10' });
    expect(reply.status).toBe(206);
    const boundary = /boundary=(.+)$/.exec(reply.headers['content-type'] ?? '')?.[1];
    expect(reply.headers['content-length']).toBe(String(reply.body.length));
    const parts = [
      [3_000_000, 3_000_099],
      [0, 99_999],
      [BIG.length - 10, BIG.length - 1],
    ] as const;
    const expected: Buffer[] = [];
    parts.forEach(([start, end], i) => {
      expected.push(
        Buffer.from(
          `${i === 0 ? '' : '\r\n'}--${boundary}\r\nContent-Type: application/octet-stream\r\n` +
            `Content-Range: bytes ${start}-${end}/${BIG.length}\r\n\r\n`,
        ),
        BIG.subarray(start, end + 1),
      );
    });
    expected.push(Buffer.from(`\r\n--${boundary}--\r\n`));
    expect(reply.body.equals(Buffer.concat(expected))).toBe(true);
  });

  it('survives a client that leaves mid-stream', async () => {
    await new Promise<void>((resolve, reject) => {
      const req = httpRequest(
        { host: '127.0.0.1', port: plain.port, path: '/big.bin', agent: false },
        (res) => {
          res.once('data', () => {
            req.destroy();
            resolve();
          });
        },
      );
      req.on('error', (err: NodeJS.ErrnoException) => {
        if (err.code !== 'ECONNRESET') reject(err);
      });
      req.end();
    });
    await new Promise((r) => setTimeout(r, 50));
    const reply = await get(plain, '/big.bin', { Range: 'bytes=0-9' });
    expect(reply.body.equals(BIG.subarray(0, 10))).toBe(true);
  });
});
