// serveStatic with Range requests through node:http, Express 5, Koa 3 and Fastify 5: the same
// 206 answers (single range and multipart/byteranges), byte for byte.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import express from 'express';
import Fastify, { type FastifyInstance } from 'fastify';
import Koa from 'koa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expressErrorHandler, expressNotFound, toExpress } from '../../src/adapters/express.js';
import { fastifyErrorHandler, fastifyNotFound, toFastify } from '../../src/adapters/fastify.js';
import { toKoa } from '../../src/adapters/koa.js';
import { toNodeListener } from '../../src/adapters/node.js';
import { silentLogger } from '../../src/diagnostics/index.js';
import { notFoundHandler } from '../../src/http/router.js';
import { serveStatic } from '../../src/http/static-files.js';
import { closeAll, type Listening, listen } from '../helpers/http.js';

const dir = mkdtempSync(join(tmpdir(), 'portico-static-adapters-'));
const FILE = randomBytes(256 * 1024);
writeFileSync(join(dir, 'data.bin'), FILE);
writeFileSync(join(dir, 'note.txt'), 'hello from disk\n');

interface BinaryReply {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

function get(at: Listening, path: string, headers: Record<string, string> = {}, method = 'GET') {
  return new Promise<BinaryReply>((resolve, reject) => {
    const req = httpRequest(
      { host: '127.0.0.1', port: at.port, path, method, headers, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks),
          }),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const hosts: Record<string, Listening> = {};
let fastify: FastifyInstance;

beforeAll(async () => {
  const files = () => serveStatic(dir);
  hosts['node:http'] = await listen(toNodeListener(files(), { logger: silentLogger }));

  const app = express();
  app.use(toExpress(files()));
  app.use(expressNotFound());
  app.use(expressErrorHandler({ logger: silentLogger }));
  hosts['express 5'] = await listen(createServer(app));

  const koa = new Koa();
  koa.silent = true;
  koa.use(toKoa([files(), notFoundHandler()], { logger: silentLogger }));
  hosts['koa 3'] = await listen(createServer(koa.callback()));

  fastify = Fastify({ logger: false });
  fastify.addHook('onRequest', toFastify(files(), { logger: silentLogger }));
  fastify.setNotFoundHandler(fastifyNotFound());
  fastify.setErrorHandler(fastifyErrorHandler({ logger: silentLogger }));
  await fastify.ready();
  hosts['fastify 5'] = await listen(fastify.server);
});

afterAll(async () => {
  await closeAll();
  await fastify.close();
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

const NAMES = ['node:http', 'express 5', 'koa 3', 'fastify 5'];

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

  it.each(NAMES)('%s: 416, 304, HEAD and a missing file', async (name) => {
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
    const missing = await get(host, '/../etc/passwd');
    expect(missing.status).toBe(404);
  });
});
