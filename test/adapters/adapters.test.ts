import 'reflect-metadata';
import { createHash } from 'node:crypto';
import { createServer, globalAgent, type Server } from 'node:http';
import { getRequestListener } from '@hono/node-server';
import { ConflictException, Controller, Get, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import express from 'express';
import express4 from 'express4';
import { Hono } from 'hono';
import { HTTPException } from 'hono/http-exception';
import Koa from 'koa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expressErrorHandler, expressNotFound } from '../../src/adapters/express.js';
import { toFastify } from '../../src/adapters/fastify.js';
import { toFetchHandler } from '../../src/adapters/fetch/index.js';
import { honoErrorHandler, honoNotFound, toHono } from '../../src/adapters/hono.js';
import { PorticoExceptionFilter, PorticoModule } from '../../src/adapters/nest.js';
import { apiKeyAuth } from '../../src/auth/api-key/authenticator.js';
import { MemoryApiKeyStore } from '../../src/auth/api-key/store.js';
import { getRequestId } from '../../src/core/index.js';
import { silentLogger } from '../../src/diagnostics/index.js';
import { notFoundHandler } from '../../src/http/index.js';
import {
  conflict,
  cors,
  createRouter,
  type Middleware,
  mount,
  rateLimit,
  readJson,
  requestId,
  securityHeaders,
  sendJson,
  toExpress,
  toKoa,
  toNodeListener,
} from '../../src/index.js';
import { nodeServerAddress } from '../helpers/adapters.js';
import { closeAll, listen, request } from '../helpers/http.js';
import { startNextApp } from '../helpers/next-app.js';

const ORIGIN = 'http://app.example.test';

function hello(): Middleware {
  return (req, res) => {
    const body = JSON.stringify({ hello: 'world', id: getRequestId(req) ?? null });
    const etag = `"${createHash('sha1').update('hello').digest('base64url')}"`;
    res.statusCode = 200; // Koa starts every response at 404
    res.setHeader('ETag', etag);
    res.setHeader('Content-Type', 'application/json; charset=utf-8');
    res.setHeader('Content-Length', Buffer.byteLength(body));
    res.end(req.method === 'HEAD' ? undefined : body);
  };
}

/** The same portico chain, whatever the host. */
function porticoChain(): Middleware[] {
  return [
    requestId(),
    securityHeaders(),
    cors({ origins: [ORIGIN], credentials: true }),
    mount('/api', rateLimit({ limit: 1000, windowMs: 60_000 })),
    createRouter({
      '/api/hello': { GET: hello() },
      '/api/echo': {
        async POST(req, res) {
          sendJson(res, 201, await readJson(req));
        },
      },
      '/api/boom': () => {
        throw new Error('secret internals: db password is hunter2');
      },
      '/api/async-boom': {
        async GET() {
          await new Promise((r) => setTimeout(r, 5));
          throw new Error('async secret internals');
        },
      },
      '/api/conflict': () => {
        throw conflict('Already there.');
      },
    }),
  ];
}

interface Host {
  name: string;
  /** The server, or the port of one this file does not own (`next start`). */
  server: Server | number;
  /** Path of a framework-native route that fails with a 409. */
  nativeError: string;
}

function nodeHost(): Host {
  const chain = porticoChain();
  chain.push((req, _res, next) => {
    if (req.url === '/native/conflict') throw conflict('native');
    return next();
  });
  return {
    name: 'node:http',
    server: createServer(toNodeListener(chain, { logger: silentLogger })),
    nativeError: '/native/conflict',
  };
}

function expressHost(name: string, factory: typeof express): Host {
  const app = factory(); // X-Powered-By left on: securityHeaders() removes it
  app.use(toExpress(porticoChain()));
  app.get('/native/conflict', (_req, _res, next) => {
    next(Object.assign(new Error('native'), { status: 409, expose: true }));
  });
  app.use(expressNotFound());
  app.use(expressErrorHandler({ logger: silentLogger }));
  return { name, server: createServer(app), nativeError: '/native/conflict' };
}

function koaHost(): Host {
  const app = new Koa();
  app.silent = true;
  app.use(toKoa(porticoChain(), { logger: silentLogger }));
  app.use(async (ctx, next) => {
    if (ctx.path === '/native/conflict') ctx.throw(409, 'native');
    await next();
  });
  app.use(toKoa(notFoundHandler()));
  return { name: 'koa 3', server: createServer(app.callback()), nativeError: '/native/conflict' };
}

/** The node server of `@hono/node-server` in front of a Fetch handler, the client's address handed on. */
function nodeServerOf(
  fetch: (request: Request, env: unknown) => Response | Promise<Response>,
): Server {
  return createServer(getRequestListener(fetch));
}

function fetchHost(): Host {
  const chain = porticoChain();
  chain.push((req, _res, next) => {
    if (req.url === '/native/conflict') throw conflict('native');
    return next();
  });
  const fetch = toFetchHandler(chain, { logger: silentLogger, clientAddress: nodeServerAddress });
  return { name: 'fetch', server: nodeServerOf(fetch), nativeError: '/native/conflict' };
}

function honoHost(): Host {
  const app = new Hono();
  app.use(toHono(porticoChain(), { logger: silentLogger }));
  app.get('/native/conflict', () => {
    throw new HTTPException(409, { message: 'native' });
  });
  app.notFound(honoNotFound());
  app.onError(honoErrorHandler({ logger: silentLogger }));
  return { name: 'hono 4', server: nodeServerOf(app.fetch), nativeError: '/native/conflict' };
}

/** A Nest controller whose route fails with Nest's own 409. */
class NativeController {
  conflict() {
    throw new ConflictException('native');
  }
}
Controller('native')(NativeController);
{
  const descriptor = Object.getOwnPropertyDescriptor(NativeController.prototype, 'conflict')!;
  Get('conflict')(NativeController.prototype, 'conflict', descriptor);
}

/**
 * A Nest application with portico's chain in front (Express: `app.use(toExpress(...))`;
 * Fastify: `toFastify(...)` in an `onRequest` hook) and PorticoExceptionFilter for Nest's own
 * errors and its 404.
 */
async function nestHost(platform: 'express' | 'fastify'): Promise<Host> {
  class AppModule {}
  Module({
    imports: [
      PorticoModule.forRoot({
        authenticators: [apiKeyAuth({ store: new MemoryApiKeyStore() })],
        logger: silentLogger,
      }),
    ],
    controllers: [NativeController],
  })(AppModule);
  const adapter = platform === 'express' ? new ExpressAdapter() : new FastifyAdapter();
  const app = await NestFactory.create(AppModule, adapter, { logger: false });
  const chain = porticoChain();
  if (platform === 'express') app.use(toExpress(chain));
  else {
    const fastify = app.getHttpAdapter().getInstance();
    fastify.addHook('onRequest', toFastify(chain, { logger: silentLogger }));
  }
  app.useGlobalFilters(app.get(PorticoExceptionFilter));
  await app.init();
  if (platform === 'fastify') await app.getHttpAdapter().getInstance().ready();
  nests.push(app);
  return {
    name: `nest ${platform}`,
    server: app.getHttpServer() as Server,
    nativeError: '/native/conflict',
  };
}

const nests: { close(): Promise<void> }[] = [];

/**
 * The same chain as a Next.js route handler (`app/[[...path]]/route.js`, every method, on the
 * packed package), served by `next start`.
 */
const NEXT_ROUTE = `import { createHash } from 'node:crypto';
import { conflict, cors, createRouter, mount, rateLimit, readJson, requestId, securityHeaders, sendJson } from 'portico';
import { getRequestId } from 'portico/core';
import { silentLogger } from 'portico/diagnostics';
import { toFetchHandler } from 'portico/fetch';

const ORIGIN = '${ORIGIN}';
const hello = (req, res) => {
  const body = JSON.stringify({ hello: 'world', id: getRequestId(req) ?? null });
  res.statusCode = 200;
  res.setHeader('ETag', '"' + createHash('sha1').update('hello').digest('base64url') + '"');
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(body));
  res.end(req.method === 'HEAD' ? undefined : body);
};
const handler = toFetchHandler([
  requestId(),
  securityHeaders(),
  cors({ origins: [ORIGIN], credentials: true }),
  mount('/api', rateLimit({ limit: 1000, windowMs: 60_000 })),
  createRouter({
    '/api/hello': { GET: hello },
    '/api/echo': { async POST(req, res) { sendJson(res, 201, await readJson(req)); } },
    '/api/boom': () => { throw new Error('secret internals: db password is hunter2'); },
    '/api/async-boom': { async GET() { await new Promise((r) => setTimeout(r, 5)); throw new Error('async secret internals'); } },
    '/api/conflict': () => { throw conflict('Already there.'); },
  }),
  (req, _res, next) => {
    if (req.url === '/native/conflict') throw conflict('native');
    return next();
  },
], { logger: silentLogger });
export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';
export { handler as GET, handler as HEAD, handler as POST, handler as PUT, handler as DELETE, handler as PATCH, handler as OPTIONS };
`;

let next: { port: number; close(): void } | undefined;

/** One request through node's global agent, which keeps connections alive between requests. */
const call = (
  server: Server | number,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string | Buffer,
) => request(server, path, { method, headers, body, agent: globalAgent });

const hosts: Host[] = [];
const silence = console.error;

beforeAll(async () => {
  console.error = () => {};
  hosts.push(
    nodeHost(),
    expressHost('express 5', express),
    expressHost('express 4', express4 as unknown as typeof express),
    koaHost(),
    fetchHost(),
    honoHost(),
    await nestHost('express'),
    await nestHost('fastify'),
  );
  await Promise.all(
    hosts.map((h) => (typeof h.server === 'number' ? undefined : listen(h.server))),
  );
  next = await startNextApp({ 'app/[[...path]]/route.js': NEXT_ROUTE });
  hosts.push({ name: 'next', server: next.port, nativeError: '/native/conflict' });
}, 300_000);

afterAll(async () => {
  console.error = silence;
  await closeAll();
  for (const app of nests) await app.close();
  next?.close();
});

describe.each([
  'node:http',
  'express 5',
  'express 4',
  'koa 3',
  'fetch',
  'hono 4',
  'nest express',
  'nest fastify',
  'next',
])('through %s', (name) => {
  const host = () => hosts.find((h) => h.name === name)!;

  it('answers with request id, security, CORS and rate-limit headers', async () => {
    const res = await call(host().server, 'GET', '/api/hello', { Origin: ORIGIN });
    expect(res.status).toBe(200);
    expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(JSON.parse(res.body)).toEqual({ hello: 'world', id: res.headers['x-request-id'] });
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['content-security-policy']).toBe(
      "default-src 'none'; frame-ancestors 'none'",
    );
    expect(res.headers['x-powered-by']).toBeUndefined(); // Express's, removed by securityHeaders()
    expect(res.headers['access-control-allow-origin']).toBe(ORIGIN);
    expect(res.headers['access-control-allow-credentials']).toBe('true');
    expect(res.headers['x-ratelimit-limit']).toBe('1000');
    expect(Number(res.headers['x-ratelimit-remaining'])).toBeLessThan(1000);
  });

  it('keeps a sane caller request id and replaces an unsafe one', async () => {
    const kept = await call(host().server, 'GET', '/api/hello', {
      'X-Request-ID': 'abc.DEF:123-_',
    });
    expect(kept.headers['x-request-id']).toBe('abc.DEF:123-_');
    const replaced = await call(host().server, 'GET', '/api/hello', {
      'X-Request-ID': 'a b<script>',
    });
    expect(replaced.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    const long = await call(host().server, 'GET', '/api/hello', {
      'X-Request-ID': 'a'.repeat(201),
    });
    expect(long.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('serves HEAD with the same Content-Length and ETag as GET, without a body', async () => {
    const get = await call(host().server, 'GET', '/api/hello', { 'X-Request-ID': 'same' });
    const head = await call(host().server, 'HEAD', '/api/hello', { 'X-Request-ID': 'same' });
    expect(head.status).toBe(200);
    expect(head.body).toBe('');
    expect(head.headers['content-length']).toBe(get.headers['content-length']);
    expect(head.headers.etag).toBe(get.headers.etag);
  });

  it('hides internals of an unexpected error and keeps the earlier headers', async () => {
    for (const path of ['/api/boom', '/api/async-boom']) {
      const res = await call(host().server, 'GET', path, { Origin: ORIGIN });
      expect(res.status).toBe(500);
      expect(res.headers['content-type']).toBe('application/problem+json');
      const problem = JSON.parse(res.body);
      expect(problem).toMatchObject({
        type: 'about:blank',
        title: 'Internal Server Error',
        status: 500,
        instance: path,
      });
      expect(problem.requestId).toBe(res.headers['x-request-id']);
      expect(problem.detail).toContain(problem.requestId);
      expect(res.body).not.toMatch(/secret|hunter2/);
      expect(res.headers['access-control-allow-origin']).toBe(ORIGIN);
      expect(res.headers['access-control-expose-headers']).toContain('X-Request-ID');
      expect(res.headers['x-ratelimit-limit']).toBe('1000');
      expect(res.headers['x-content-type-options']).toBe('nosniff');
    }
  });

  it('renders portico and framework-native errors as problems without dropping headers', async () => {
    for (const path of ['/api/conflict', host().nativeError]) {
      const res = await call(host().server, 'GET', path, { Origin: ORIGIN });
      expect(res.status).toBe(409);
      expect(res.headers['content-type']).toBe('application/problem+json');
      expect(JSON.parse(res.body)).toMatchObject({
        status: 409,
        title: 'Conflict',
        instance: path,
      });
      expect(res.headers['access-control-allow-origin']).toBe(ORIGIN);
      expect(res.headers['x-request-id']).toBeTruthy();
      expect(res.headers['x-frame-options']).toBe('DENY');
    }
  });

  it('answers an unknown path with a 404 problem', async () => {
    const res = await call(host().server, 'GET', '/nowhere?api_key=secret');
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toBe('application/problem+json');
    const problem = JSON.parse(res.body);
    expect(problem).toMatchObject({ status: 404, instance: '/nowhere' });
    expect(res.body).not.toContain('secret');
    expect(res.headers['x-powered-by']).toBeUndefined();
  });

  it('answers 405 with Allow and a bare OPTIONS with 204 and Allow', async () => {
    const res = await call(host().server, 'DELETE', '/api/hello');
    expect(res.status).toBe(405);
    expect(res.headers.allow).toBe('GET, HEAD, OPTIONS');
    expect(JSON.parse(res.body).status).toBe(405);
    const options = await call(host().server, 'OPTIONS', '/api/hello');
    expect(options.status).toBe(204);
    expect(options.headers.allow).toBe('GET, HEAD, OPTIONS');
  });

  it('answers a CORS preflight from an allowed origin', async () => {
    const res = await call(host().server, 'OPTIONS', '/api/echo', {
      Origin: ORIGIN,
      'Access-Control-Request-Method': 'POST',
      'Access-Control-Request-Headers': 'content-type',
    });
    expect(res.status).toBe(204);
    expect(res.headers['access-control-allow-origin']).toBe(ORIGIN);
    expect(res.headers['access-control-allow-methods']).toContain('POST');
    expect(res.headers['access-control-max-age']).toBe('86400');
    expect(res.headers.vary).toContain('Origin');
  });

  it('reads JSON bodies and refuses bad ones with the right problem', async () => {
    const json = { 'Content-Type': 'application/json' };
    const ok = await call(host().server, 'POST', '/api/echo', json, '{"a":[1,2]}');
    expect(ok.status).toBe(201);
    expect(JSON.parse(ok.body)).toEqual({ a: [1, 2] });
    const bad = await call(host().server, 'POST', '/api/echo', json, '{"a":1,}');
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.body).detail).toMatch(/line 1, column 8/);
    const wrongType = await call(
      host().server,
      'POST',
      '/api/echo',
      { 'Content-Type': 'text/plain' },
      'hi',
    );
    expect(wrongType.status).toBe(415);
    const big = await call(
      host().server,
      'POST',
      '/api/echo',
      json,
      Buffer.alloc(1024 * 1024 + 10, 0x20),
    );
    expect(big.status).toBe(413);
    expect(big.headers['content-type']).toBe('application/problem+json');
  });

  it('answers application/json to clients that accept only that', async () => {
    const res = await call(host().server, 'GET', '/api/conflict', { Accept: 'application/json' });
    expect(res.status).toBe(409);
    expect(res.headers['content-type']).toBe('application/json');
    expect(JSON.parse(res.body).status).toBe(409);
  });
});

describe.each([
  ['express 5', express],
  ['express 4', express4 as unknown as typeof express],
])('X-Powered-By on %s', (_name, factory) => {
  it('is sent by Express, and removed by securityHeaders() mounted with toExpress', async () => {
    const served = async (chain: Middleware[]) => {
      const app = factory();
      app.use(toExpress(chain));
      app.get('/', (_req, res) => {
        res.json({ ok: true });
      });
      const server = createServer(app);
      await listen(server);
      return (await call(server, 'GET', '/')).headers['x-powered-by'];
    };
    expect(await served([requestId()])).toBe('Express');
    expect(await served([requestId(), securityHeaders()])).toBeUndefined();
  });
});
