// The bytes of portico's answers on every adapter, against those recorded before portico held
// its own response head (issue 42: test/fixtures/raw-heads.json, recorded with setHeader per
// field): the same header lines, in the same order, and the same body, for portico's own
// writers, a handler's setHeader and writeHead, and each framework's own way of answering.
// `PORTICO_RECORD_HEADS=1` records the file again (only after a change meant to alter them).
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import express from 'express';
import Fastify from 'fastify';
import Koa from 'koa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expressErrorHandler, expressNotFound, toExpress } from '../../src/adapters/express.js';
import { fastifyErrorHandler, fastifyNotFound, toFastify } from '../../src/adapters/fastify.js';
import { toKoa } from '../../src/adapters/koa.js';
import { toNodeListener } from '../../src/adapters/node.js';
import { apiKeyAuth } from '../../src/auth/api-key/authenticator.js';
import { importApiKey, MemoryApiKeyStore } from '../../src/auth/api-key/store.js';
import { authenticate } from '../../src/auth/authenticate.js';
import { compose, type Middleware } from '../../src/core/compose.js';
import { notFound } from '../../src/core/errors/errors.js';
import { send, sendJson, sendRedirect } from '../../src/core/send.js';
import { cors } from '../../src/cors/cors.js';
import { silentLogger } from '../../src/diagnostics/index.js';
import { requestId } from '../../src/http/request-id.js';
import { createRouter, notFoundHandler } from '../../src/http/routing/router.js';
import { securityHeaders } from '../../src/http/security-headers.js';
import { rateLimit } from '../../src/rate-limit/rate-limit.js';
import { closeAll, type Listening, listen, parseReply, rawRequest } from '../helpers/http.js';

const FIXTURE = new URL('../fixtures/raw-heads.json', import.meta.url);
const ORIGIN = 'http://app.example.test';
const KEY = 'raw-heads-key-0123456789abcdef0123456789';

/** One chain for every host: the middleware a service puts in front of its routes. */
async function chain(): Promise<Middleware[]> {
  const store = new MemoryApiKeyStore();
  await importApiKey(store, KEY, { owner: 'alice' });
  return [
    requestId({ trustIncoming: true }),
    securityHeaders(),
    cors({ origins: [ORIGIN], credentials: true }),
    rateLimit({ limit: 1_000_000, windowMs: 3_600_000 }),
    createRouter({
      '/json': { GET: (_req, res) => sendJson(res, 200, { hello: 'world' }) },
      '/text': { GET: (_req, res) => send(res, 200, 'text', { 'Content-Type': 'text/plain' }) },
      '/created': {
        POST: (_req, res) => sendJson(res, 201, { id: 1 }, { Location: '/created/1' }),
      },
      '/redirect': { GET: (_req, res) => sendRedirect(res, 303, '/json') },
      '/problem': {
        GET: () => {
          throw notFound('no such thing');
        },
      },
      '/own': {
        GET: (_req, res) => {
          res.setHeader('ETag', '"v1"');
          res.setHeader('X-Frame-Options', 'SAMEORIGIN');
          res.appendHeader('Vary', 'Accept');
          sendJson(res, 200, { own: true });
        },
      },
      '/write-head': {
        GET: (_req, res) => {
          res.writeHead(202, { 'Content-Type': 'text/plain', 'Content-Length': 2 });
          res.end('ok');
        },
      },
      '/end': {
        GET: (_req, res) => {
          res.statusCode = 200;
          res.end('plain');
        },
      },
      '/me': {
        GET: compose([
          authenticate([apiKeyAuth({ store })]),
          (_req, res) => sendJson(res, 200, { me: 'alice' }),
        ]),
      },
    }),
  ];
}

/** The requests each host answers: the chain's routes, then one only the framework answers. */
const REQUESTS: Record<string, string> = {
  json: 'GET /json',
  'json, CORS': `GET /json\r\nOrigin: ${ORIGIN}`,
  head: 'HEAD /json',
  text: 'GET /text',
  created: 'POST /created\r\nContent-Length: 0',
  redirect: 'GET /redirect',
  problem: 'GET /problem',
  own: `GET /own\r\nOrigin: ${ORIGIN}`,
  'write-head': 'GET /write-head',
  end: 'GET /end',
  authenticated: `GET /me\r\nX-API-Key: ${KEY}`,
  refused: 'GET /me\r\nX-API-Key: raw-heads-key-wrong-0123456789abcdef01',
  preflight: `OPTIONS /json\r\nOrigin: ${ORIGIN}\r\nAccess-Control-Request-Method: PUT`,
  'framework 404': 'GET /nowhere',
};

async function hosts(): Promise<Record<string, Listening>> {
  const logger = silentLogger;
  const out: Record<string, Listening> = {};
  out['node:http'] = await listen(toNodeListener(await chain(), { logger }));
  const app = express();
  app.use(toExpress(await chain()));
  app.get('/express-json', (_req, res) => {
    res.json({ framework: 'express' });
  });
  app.use(expressNotFound());
  app.use(expressErrorHandler({ logger }));
  out['express 5'] = await listen(createServer(app));
  const koa = new Koa();
  koa.silent = true;
  koa.use(toKoa([...(await chain())], { logger }));
  koa.use((ctx, next) => {
    if (ctx.path !== '/koa-json') return next();
    ctx.body = { framework: 'koa' };
  });
  koa.use(toKoa([notFoundHandler()], { logger }));
  out['koa 3'] = await listen(createServer(koa.callback()));
  const fastify = Fastify({ logger: false });
  fastify.addHook('onRequest', toFastify(await chain(), { logger }));
  fastify.get('/fastify-json', async () => ({ framework: 'fastify' }));
  fastify.setNotFoundHandler(fastifyNotFound());
  fastify.setErrorHandler(fastifyErrorHandler({ logger }));
  await fastify.ready();
  out['fastify 5'] = await listen(fastify.server);
  closers.push(() => fastify.close());
  return out;
}

const FRAMEWORK_ANSWERS: Record<string, string> = {
  'express 5': 'GET /express-json',
  'koa 3': 'GET /koa-json',
  'fastify 5': 'GET /fastify-json',
};

const closers: (() => Promise<unknown>)[] = [];
let listening: Record<string, Listening>;
beforeAll(async () => {
  listening = await hosts();
});
afterAll(async () => {
  for (const close of closers) await close();
  await closeAll();
});

/** The answer's status line, header lines and body, with what differs per run made fixed. */
async function answer(port: number, request: string): Promise<string[]> {
  const [line, ...headers] = request.split('\r\n');
  const text = await rawRequest(
    port,
    `${line} HTTP/1.1\r\nHost: example.test\r\nX-Request-ID: req-fixed\r\n${headers
      .map((h) => `${h}\r\n`)
      .join('')}Connection: close\r\n\r\n`,
  );
  const reply = parseReply(text);
  return [
    reply.statusLine,
    ...reply.lines
      .filter((l) => !/^date:/i.test(l))
      .map((l) =>
        l
          .replace(/^(X-RateLimit-Reset: )\d+$/i, '$1<s>')
          .replace(/^(X-RateLimit-Remaining: )\d+$/i, '$1<n>'),
      ),
    '',
    reply.body,
  ];
}

type Recorded = Record<string, Record<string, string[]>>;

async function record(): Promise<Recorded> {
  const recorded: Recorded = {};
  for (const [host, { port }] of Object.entries(listening)) {
    const answers: Record<string, string[]> = {};
    const requests = { ...REQUESTS, framework: FRAMEWORK_ANSWERS[host] };
    for (const [name, request] of Object.entries(requests)) {
      if (request !== undefined) answers[name] = await answer(port, request);
    }
    recorded[host] = answers;
  }
  return recorded;
}

describe('portico’s answers, byte for byte, on every adapter', () => {
  it('are those recorded before portico held its response head', async () => {
    const now = await record();
    if (process.env.PORTICO_RECORD_HEADS === '1') {
      writeFileSync(FIXTURE, `${JSON.stringify(now, null, 2)}\n`);
    }
    const before = JSON.parse(readFileSync(FIXTURE, 'utf8')) as Recorded;
    expect(Object.keys(now)).toEqual(Object.keys(before));
    for (const host of Object.keys(before)) {
      for (const name of Object.keys(before[host]!)) {
        expect(now[host]?.[name], `${host}, ${name}`).toEqual(before[host]![name]);
      }
    }
  });
});
