// serveStatic with Range requests through node:http, Express 5, Koa 3, Fastify 5, Fetch and Hono 4: the same
// 206 answers (single range and multipart/byteranges), byte for byte.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveStatic } from '../../src/http/representation/static-files.js';
import { type BinaryReply, requestBytes as get, hostOnEveryAdapter } from '../helpers/adapters.js';
import { closeAll, type Listening } from '../helpers/http.js';

const dir = mkdtempSync(join(tmpdir(), 'portico-static-adapters-'));
const FILE = randomBytes(256 * 1024);
writeFileSync(join(dir, 'data.bin'), FILE);
writeFileSync(join(dir, 'note.txt'), 'hello from disk\n');

let hosts: Record<string, Listening> = {};
let close: () => Promise<void>;

beforeAll(async () => {
  ({ hosts, close } = await hostOnEveryAdapter(() => serveStatic(dir)));
});

afterAll(async () => {
  await closeAll();
  await close();
  rmSync(dir, { recursive: true, force: true });
});

/** The headers that must be the same on every host (a multipart boundary aside). */
function essentials(reply: BinaryReply) {
  const type = reply.headers['content-type'] ?? '';
  const boundary = /boundary=(.+)$/.exec(type)?.[1];
  const body = boundary
    ? Buffer.from(reply.body.toString('latin1').replaceAll(boundary, 'B'), 'latin1')
    : reply.body;
  return {
    status: reply.status,
    contentType: boundary ? type.replace(boundary, 'B') : type,
    contentRange: reply.headers['content-range'],
    contentLength: reply.headers['content-length'],
    acceptRanges: reply.headers['accept-ranges'],
    etag: reply.headers.etag,
    lastModified: reply.headers['last-modified'],
    body: body.toString('base64'),
  };
}

const NAMES = ['node:http', 'express 5', 'koa 3', 'fastify 5', 'fetch', 'hono 4'];

describe('serveStatic through every adapter', () => {
  it.each([
    ['a single range', 'bytes=1000-1999'],
    ['a suffix range', 'bytes=-100'],
    ['several ranges', 'bytes=0-99,200000-200099'],
  ])('gives the same 206 to %s', async (_label, range) => {
    const replies = await Promise.all(
      NAMES.map((name) => get(hosts[name]!, '/data.bin', { Range: range })),
    );
    const expected = essentials(replies[0]!);
    expect(expected.status).toBe(206);
    for (const [i, reply] of replies.entries()) {
      expect({ host: NAMES[i], ...essentials(reply) }).toEqual({ host: NAMES[i], ...expected });
    }
    if (replies[0]!.headers['content-range'] !== undefined) {
      const [, start, end] = /^bytes (\d+)-(\d+)\/\d+$/.exec(replies[0]!.headers['content-range'])!;
      expect(replies[0]!.body.equals(FILE.subarray(Number(start), Number(end) + 1))).toBe(true);
    }
  });

  it.each(NAMES)('%s: 416, 304, HEAD, a missing file and a traversal', async (name) => {
    const host = hosts[name]!;
    const unsatisfiable = await get(host, '/data.bin', { Range: `bytes=${FILE.length}-` });
    expect(unsatisfiable.status).toBe(416);
    expect(unsatisfiable.headers['content-range']).toBe(`bytes */${FILE.length}`);
    expect(unsatisfiable.headers['content-type']).toBe('application/problem+json');
    const whole = await get(host, '/note.txt');
    expect(whole.body.toString()).toBe('hello from disk\n');
    const again = await get(host, '/note.txt', { 'If-None-Match': whole.headers.etag! });
    expect(again.status).toBe(304);
    const head = await get(host, '/data.bin', {}, 'HEAD');
    expect(head.status).toBe(200);
    expect(head.headers['content-length']).toBe(String(FILE.length));
    expect(head.body.length).toBe(0);
    const missing = await get(host, '/missing.txt');
    expect(missing.status).toBe(404);
    const traversal = await get(host, '/../etc/passwd');
    // a Fetch host's URL parser resolved the dot segment before anyone read it: /etc/passwd,
    // which is not under the root
    expect(traversal.status).toBe(name === 'fetch' || name === 'hono 4' ? 404 : 400);
    expect(traversal.headers['content-type']).toBe('application/problem+json');
    const encoded = await get(host, '/..%2fetc%2fpasswd');
    expect([400, 404]).toContain(encoded.status);
    expect(encoded.body.toString()).not.toContain('root:');
  });
});
