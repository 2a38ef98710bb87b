// The reference server's ranges and compression rows, from outside: its static files by byte
// ranges (206, multipart, 416, If-Range), bodies of 1 KiB or more compressed as
// Accept-Encoding allows (br first, q-values, identity;q=0), never /events, a 206 or a small
// body, with Vary and a Content-Length that matches the bytes sent.
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningServer, startReferenceServer } from './spawn-server.js';

let server: RunningServer;
const DEMO_KEY = 'demo-representations-key-0123456789abcdef';

beforeAll(async () => {
  server = await startReferenceServer({ RATE_LIMIT: '100000', DEMO_API_KEY: DEMO_KEY });
});
afterAll(async () => {
  await server?.stop();
});

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** A GET with `headers`, the body as the bytes sent (no decoding). */
function get(path: string, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${server.url}${path}`, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

describe('ranges on the static files', () => {
  let whole: Answer;
  beforeAll(async () => {
    whole = await get('/avatars/alice.svg');
  });

  it('answers the whole file with Accept-Ranges and a strong ETag', () => {
    expect(whole.status).toBe(200);
    expect(whole.headers['accept-ranges']).toBe('bytes');
    expect(whole.headers.etag).toMatch(/^"/);
  });

  it.each([
    ['bytes=0-9', 0, 10],
    ['bytes=5-', 5, undefined],
    ['bytes=-7', -7, undefined],
  ])('answers %s with 206 and exactly those bytes', async (range, start, end) => {
    const part = await get('/avatars/alice.svg', { Range: range });
    expect(part.status).toBe(206);
    const expected = whole.body.subarray(start, end);
    expect(part.body.equals(expected)).toBe(true);
    const first = start < 0 ? whole.body.length + start : start;
    expect(part.headers['content-range']).toBe(
      `bytes ${first}-${first + expected.length - 1}/${whole.body.length}`,
    );
  });

  it('answers several ranges as multipart/byteranges, and an impossible one 416', async () => {
    const multi = await get('/avatars/alice.svg', { Range: 'bytes=0-1,10-11' });
    expect(multi.status).toBe(206);
    expect(multi.headers['content-type']).toMatch(/^multipart\/byteranges; boundary=/);
    expect(multi.body.toString()).toContain(`Content-Range: bytes 10-11/${whole.body.length}`);
    const none = await get('/avatars/alice.svg', { Range: `bytes=${whole.body.length + 10}-` });
    expect(none.status).toBe(416);
    expect(none.headers['content-range']).toBe(`bytes */${whole.body.length}`);
  });

  it('takes If-Range with the current ETag, and answers 200 whole with another', async () => {
    const etag = whole.headers.etag as string;
    expect((await get('/avatars/alice.svg', { Range: 'bytes=0-1', 'If-Range': etag })).status).toBe(
      206,
    );
    const stale = await get('/avatars/alice.svg', { Range: 'bytes=0-1', 'If-Range': '"other"' });
    expect(stale.status).toBe(200);
    expect(stale.body.equals(whole.body)).toBe(true);
  });
});

describe('compression', () => {
  it('compresses / in br first, gzip when br is refused, with Vary and an exact length', async () => {
    const identity = await get('/');
    expect(identity.body.length).toBeGreaterThanOrEqual(1024);
    expect(identity.headers.vary).toMatch(/Accept-Encoding/i);
    const br = await get('/', { 'Accept-Encoding': 'gzip, br' });
    expect(br.headers['content-encoding']).toBe('br');
    expect(brotliDecompressSync(br.body).equals(identity.body)).toBe(true);
    if (br.headers['content-length'] !== undefined) {
      expect(Number(br.headers['content-length'])).toBe(br.body.length);
    }
    const gzip = await get('/', { 'Accept-Encoding': 'br;q=0, gzip;q=0.8' });
    expect(gzip.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(gzip.body).equals(identity.body)).toBe(true);
  });

  it('compresses the console files and the OAuth pages too', async () => {
    const script = await get('/console.js', { 'Accept-Encoding': 'gzip' });
    expect(script.headers['content-encoding']).toBe('gzip');
    const page = await get(
      '/authorize?response_type=code&client_id=demo-web&redirect_uri=http%3A%2F%2F127.0.0.1%3A8080%2Fcallback&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=S256&scope=openid',
      { 'Accept-Encoding': 'gzip' },
    );
    expect(page.status).toBe(200);
    expect(page.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(page.body).toString()).toContain('<form');
  });

  it('never compresses a 206, a body under 1 KiB, or when identity alone is accepted', async () => {
    const part = await get('/', { Range: 'bytes=0-99', 'Accept-Encoding': 'br, gzip' });
    expect(part.status).toBe(206);
    expect(part.headers['content-encoding']).toBeUndefined();
    const small = await get('/healthz', { 'Accept-Encoding': 'br, gzip' });
    expect(small.headers['content-encoding']).toBeUndefined();
    const plain = await get('/', { 'Accept-Encoding': 'identity' });
    expect(plain.headers['content-encoding']).toBeUndefined();
  });

  it('never compresses /events', async () => {
    const headers = await new Promise<IncomingHttpHeaders>((resolve, reject) => {
      const req = httpRequest(
        `${server.url}/events`,
        { headers: { 'Accept-Encoding': 'br, gzip', 'X-API-Key': DEMO_KEY } },
        (res) => {
          expect(res.statusCode).toBe(200);
          expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
          resolve(res.headers);
          res.destroy();
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(headers['content-encoding']).toBeUndefined();
  });
});
