// The same compressed answer from compression() through node:http, Express 5, Koa 3 and
// Fastify 5, decoded with node:zlib and compared with the original bytes.
import {
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type Server,
} from 'node:http';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import express from 'express';
import Fastify, { type FastifyInstance } from 'fastify';
import Koa from 'koa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toExpress } from '../../src/adapters/express.js';
import { toFastify } from '../../src/adapters/fastify.js';
import { toKoa } from '../../src/adapters/koa.js';
import { toNodeListener } from '../../src/adapters/node.js';
import { silentLogger } from '../../src/diagnostics/index.js';
import { compression } from '../../src/http/compression/compression.js';
import { closeAll, listen } from '../helpers/http.js';

const BODY = JSON.stringify({
  items: Array.from({ length: 300 }, (_, i) => ({ id: i, name: `item ${i}` })),
});
const SMALL = JSON.stringify({ ok: true });

const ports = new Map<string, number>();
let fastify: FastifyInstance;

function nodeServer(): Server {
  return createServer(
    toNodeListener(
      [
        compression(),
        (req, res) => {
          const body = req.url === '/small' ? SMALL : BODY;
          res.statusCode = 200;
          res.setHeader('Content-Type', 'application/json; charset=utf-8');
          res.setHeader('Content-Length', Buffer.byteLength(body));
          res.end(body);
        },
      ],
      { logger: silentLogger },
    ),
  );
}

function expressServer(): Server {
  const app = express();
  app.use(toExpress(compression()));
  app.get('/data', (_req, res) => {
    res.type('application/json').send(BODY);
  });
  app.get('/small', (_req, res) => {
    res.type('application/json').send(SMALL);
  });
  return createServer(app);
}

function koaServer(): Server {
  const app = new Koa();
  app.silent = true;
  app.use(toKoa(compression()));
  app.use((ctx) => {
    ctx.type = 'application/json';
    ctx.body = ctx.path === '/small' ? SMALL : BODY;
  });
  return createServer(app.callback());
}

beforeAll(async () => {
  ports.set('node:http', (await listen(nodeServer())).port);
  ports.set('express 5', (await listen(expressServer())).port);
  ports.set('koa 3', (await listen(koaServer())).port);
  fastify = Fastify();
  fastify.addHook('onRequest', toFastify(compression()));
  fastify.get('/data', async (_request, reply) => reply.type('application/json').send(BODY));
  fastify.get('/small', async (_request, reply) => reply.type('application/json').send(SMALL));
  await fastify.listen({ port: 0, host: '127.0.0.1' });
  const address = fastify.server.address();
  ports.set('fastify 5', typeof address === 'object' && address ? address.port : 0);
});

afterAll(async () => {
  await closeAll();
  await fastify.close();
});

interface BinaryReply {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

function fetchBytes(port: number, path: string, acceptEncoding?: string): Promise<BinaryReply> {
  const headers = acceptEncoding === undefined ? {} : { 'Accept-Encoding': acceptEncoding };
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

describe.each(['node:http', 'express 5', 'koa 3', 'fastify 5'])(
  'compression through %s',
  (host) => {
    const port = () => ports.get(host)!;

    it.each(['br', 'gzip'])('answers %s, decoding to the same bytes', async (coding) => {
      const reply = await fetchBytes(port(), '/data', `${coding}, identity;q=0.5`);
      expect(reply.status).toBe(200);
      expect(reply.headers['content-encoding']).toBe(coding);
      expect(reply.headers.vary).toMatch(/Accept-Encoding/);
      const decoded = coding === 'br' ? brotliDecompressSync(reply.body) : gunzipSync(reply.body);
      expect(decoded.toString('utf8')).toBe(BODY);
      if (reply.headers['content-length'] !== undefined) {
        expect(Number(reply.headers['content-length'])).toBe(reply.body.length);
      }
    });

    it('answers identity when not asked, and leaves a small body alone', async () => {
      const plain = await fetchBytes(port(), '/data');
      expect(plain.headers['content-encoding']).toBeUndefined();
      expect(plain.body.toString('utf8')).toBe(BODY);
      expect(plain.headers.vary).toMatch(/Accept-Encoding/);
      const small = await fetchBytes(port(), '/small', 'br, gzip');
      expect(small.headers['content-encoding']).toBeUndefined();
      expect(small.body.toString('utf8')).toBe(SMALL);
    });
  },
);
