// Issue 37, hole 1: a guard on `/api` and the host's router must agree on what is under `/api`.
// Every composition the README and the examples use, on every adapter, is sent the path
// variants a framework's router may take for `/api/events` (Express matches case-insensitively,
// Fastify decodes %61 before it routes and, when told, merges slashes and cuts at `;`). An
// anonymous caller must never reach the handler, which on purpose does not ask for a principal.
import 'reflect-metadata';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { getRequestListener } from '@hono/node-server';
import { Controller, Get, Module, UseGuards } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import express from 'express';
import express4 from 'express4';
import Fastify from 'fastify';
import { Hono } from 'hono';
import Koa from 'koa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expressErrorHandler, expressNotFound, toExpress } from '../../src/adapters/express.js';
import {
  fastifyErrorHandler,
  fastifyNotFound,
  fastifyPortico,
  toFastify,
} from '../../src/adapters/fastify.js';
import { toFetchHandler } from '../../src/adapters/fetch/index.js';
import { honoErrorHandler, honoNotFound, toHono } from '../../src/adapters/hono.js';
import { toKoa } from '../../src/adapters/koa.js';
import {
  PorticoAuthGuard,
  PorticoExceptionFilter,
  PorticoModule,
} from '../../src/adapters/nest.js';
import { toNodeListener } from '../../src/adapters/node.js';
import { apiKeyAuth } from '../../src/auth/api-key/authenticator.js';
import { importApiKey, MemoryApiKeyStore } from '../../src/auth/api-key/store.js';
import { authenticate } from '../../src/auth/authenticate.js';
import type { Middleware } from '../../src/core/compose.js';
import { silentLogger } from '../../src/diagnostics/index.js';
import { createRouter, mount, notFoundHandler } from '../../src/http/routing/router.js';
import { closeAll, type Listening, listen } from '../helpers/http.js';
import { startNextApp } from '../helpers/next-app.js';
import {
  nextServerAnswer,
  nodeServerAnswer,
  sendRaw as send,
  variantsOf,
} from '../helpers/path-variants.js';

const VARIANTS = variantsOf('/api/events');

const KEY = 'path-variants-key-0123456789abcdef';
const SECRET = 'every message of the channel';
const logger = silentLogger;

let store: MemoryApiKeyStore;
const guard = () => authenticate([apiKeyAuth({ store })]);

/** The handler an app forgot to guard: it serves whoever reaches it. */
const leak = (res: ServerResponse) => {
  res.statusCode = 200;
  res.setHeader('Content-Type', 'text/plain');
  res.end(SECRET);
};

const NEXT_HOST = 'next 16, a wrapped route beside a catch-all with mount + router';

type Host = Record<string, () => Promise<Listening>>;

const hosts: Host = {
  'node:http, mount + router': () =>
    listen(
      toNodeListener(
        [mount('/api', guard()), createRouter({ '/api/events': { GET: (_q, r) => leak(r) } })],
        { logger },
      ),
    ),
  'express 5, app.use("/api", toExpress(...))': () => expressHost(express, 'use'),
  'express 5, toExpress(mount("/api", ...))': () => expressHost(express, 'mount'),
  'express 4, app.use("/api", toExpress(...))': () => expressHost(express4, 'use'),
  'express 4, toExpress(mount("/api", ...))': () => expressHost(express4, 'mount'),
  'express 5 case sensitive, toExpress(mount(..., { caseSensitive: true }))': async () => {
    const app = express();
    app.set('case sensitive routing', true);
    app.use(toExpress(mount('/api', guard(), { caseSensitive: true })));
    app.get('/api/events', (_req, res) => leak(res));
    app.use(expressNotFound());
    app.use(expressErrorHandler({ logger }));
    return listen(createServer(app));
  },
  'koa 3, toKoa(mount("/api", ...))': async () => {
    const app = new Koa();
    app.silent = true;
    app.use(toKoa(mount('/api', guard()), { logger }));
    app.use(async (ctx, next) => {
      if (ctx.path === '/api/events') return leak(ctx.res);
      await next();
    });
    app.use(toKoa(notFoundHandler()));
    return listen(createServer(app.callback()));
  },
  'fetch on @hono/node-server, mount + router': () =>
    listen(
      createServer(
        getRequestListener(
          toFetchHandler(
            [mount('/api', guard()), createRouter({ '/api/events': { GET: (_q, r) => leak(r) } })],
            { logger },
          ),
        ),
      ),
    ),
  'hono 4, app.use("/api/*", toHono(...))': () => honoHost('use'),
  'hono 4, app.use(toHono(mount("/api", ...)))': () => honoHost('mount'),
  'nest express, PorticoAuthGuard on the controller': () => nestHost('express'),
  'nest fastify, PorticoAuthGuard on the controller': () => nestHost('fastify'),
  [NEXT_HOST]: () => nextHost(),
  'fastify 5, fastifyPortico under a prefix': () => fastifyHost({}, 'prefix'),
  'fastify 5, toFastify(mount("/api", ...)) hook': () => fastifyHost({}, 'mount'),
  'fastify 5 lax router, fastifyPortico under a prefix': () => fastifyHost(LAX, 'prefix'),
  'fastify 5 lax router, toFastify(mount("/api", ...)) hook': () => fastifyHost(LAX, 'mount'),
};

/** Every Fastify router option that widens what is routed to `/api/events`. */
const LAX = {
  routerOptions: {
    caseSensitive: false,
    ignoreDuplicateSlashes: true,
    useSemicolonDelimiter: true,
  },
};

async function expressHost(factory: typeof express, shape: 'use' | 'mount') {
  const app = factory();
  if (shape === 'use') app.use('/api', toExpress(guard()));
  else app.use(toExpress(mount('/api', guard())));
  app.get('/api/events', (_req, res) => leak(res));
  app.use(expressNotFound());
  app.use(expressErrorHandler({ logger }));
  return listen(createServer(app));
}

async function honoHost(shape: 'use' | 'mount') {
  const app = new Hono();
  if (shape === 'use') app.use('/api/*', toHono(guard(), { logger }));
  else app.use(toHono(mount('/api', guard()), { logger }));
  app.get('/api/events', (c) => c.text(SECRET));
  app.notFound(honoNotFound());
  app.onError(honoErrorHandler({ logger }));
  return listen(createServer(getRequestListener(app.fetch)));
}

/** The handler a Nest app forgot nothing on: the guard sits on its controller. */
class EventsController {
  events() {
    return SECRET;
  }
}
Controller('api')(EventsController);
UseGuards(PorticoAuthGuard)(EventsController);
{
  const descriptor = Object.getOwnPropertyDescriptor(EventsController.prototype, 'events')!;
  Get('events')(EventsController.prototype, 'events', descriptor);
}

const nests: { close(): unknown }[] = [];

async function nestHost(platform: 'express' | 'fastify') {
  class AppModule {}
  Module({
    imports: [PorticoModule.forRoot({ authenticators: [apiKeyAuth({ store })], logger })],
    controllers: [EventsController],
  })(AppModule);
  // Fastify answers a URL it cannot decode before Nest sees it: `frameworkErrors` makes it a problem
  const adapter =
    platform === 'express'
      ? new ExpressAdapter()
      : new FastifyAdapter({ frameworkErrors: fastifyErrorHandler({ logger }) } as object);
  const app = await NestFactory.create(AppModule, adapter, { logger: false });
  app.useGlobalFilters(app.get(PorticoExceptionFilter));
  await app.init();
  if (platform === 'fastify') await app.getHttpAdapter().getInstance().ready();
  nests.push(app);
  return listen(app.getHttpServer() as Server);
}

/** The Next.js way (one wrapped route handler per route) beside a catch-all doing it portico's way. */
const NEXT_FILES = {
  'lib/keys.js': `import { MemoryApiKeyStore } from 'portico';
import { importApiKey } from 'portico/auth';
export const store = new MemoryApiKeyStore();
await importApiKey(store, '${KEY}', { owner: 'demo' });
`,
  'app/api/events/route.js': `import { apiKeyAuth, authenticate } from 'portico';
import { silentLogger } from 'portico/diagnostics';
import { toFetchHandler } from 'portico/fetch';
import { store } from '../../../lib/keys.js';
export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';
export const GET = toFetchHandler(authenticate([apiKeyAuth({ store })]), {
  handler: () => new Response('${SECRET}', { headers: { 'Content-Type': 'text/plain' } }),
  logger: silentLogger,
});
`,
  'app/[[...path]]/route.js': `import { apiKeyAuth, authenticate, createRouter, mount } from 'portico';
import { silentLogger } from 'portico/diagnostics';
import { toFetchHandler } from 'portico/fetch';
import { store } from '../../lib/keys.js';
export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';
const leak = (_req, res) => { res.setHeader('Content-Type', 'text/plain'); res.end('${SECRET}'); };
export const GET = toFetchHandler(
  [mount('/api', authenticate([apiKeyAuth({ store })])), createRouter({ '/api/events': { GET: leak } })],
  { logger: silentLogger },
);
`,
};

async function nextHost(): Promise<Listening> {
  const app = await startNextApp(NEXT_FILES);
  nests.push(app);
  return { port: app.port, url: `http://127.0.0.1:${app.port}` } as Listening;
}

async function fastifyHost(options: object, shape: 'prefix' | 'mount') {
  // Fastify answers a URL it cannot decode before any hook: `frameworkErrors` makes it a problem
  const frameworkErrors = fastifyErrorHandler({ logger });
  const app = Fastify({ ...options, frameworkErrors } as object);
  app.setNotFoundHandler(fastifyNotFound());
  app.setErrorHandler(fastifyErrorHandler({ logger }));
  const events = (_request: unknown, reply: { hijack(): unknown; raw: ServerResponse }) => {
    reply.hijack();
    leak(reply.raw);
  };
  if (shape === 'prefix') {
    await app.register(
      async (api) => {
        await api.register(fastifyPortico, { use: guard(), logger });
        api.get('/events', events);
      },
      { prefix: '/api' },
    );
  } else {
    app.addHook('onRequest', toFastify(mount('/api', guard()) as Middleware, { logger }));
    app.get('/api/events', events);
  }
  await app.ready();
  return listen(app.server);
}

const running: Record<string, Listening> = {};

beforeAll(async () => {
  store = new MemoryApiKeyStore();
  await importApiKey(store, KEY, { owner: 'demo' });
  for (const [name, start] of Object.entries(hosts)) running[name] = await start();
}, 300_000);

afterAll(async () => {
  await closeAll();
  for (const app of nests) await app.close();
});

describe.each(Object.keys(hosts))('%s', (name) => {
  it('serves /api/events to a caller with a key, and refuses an anonymous one with 401', async () => {
    const { port } = running[name]!;
    const good = await send(port, '/api/events', [`X-API-Key: ${KEY}`]);
    expect(good.status).toBe(200);
    expect(good.body).toContain(SECRET); // Next.js sends it chunked
    const anonymous = await send(port, '/api/events');
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).not.toContain(SECRET);
  });

  it.each(VARIANTS)('never serves %s to an anonymous caller', async (variant) => {
    const reply = await send(running[name]!.port, variant);
    expect(reply.body).not.toContain(SECRET);
    if (name.includes('@hono/node-server') || name.startsWith('hono')) {
      const own = nodeServerAnswer(variant);
      if (own !== undefined) {
        // refused by @hono/node-server before any handler runs: its own empty answer (chunked)
        expect([reply.status, reply.body]).toEqual([own, '0\r\n\r\n']);
        return;
      }
    }
    if (name.startsWith('next')) {
      const own = nextServerAnswer(variant);
      if (own !== undefined) {
        // answered by Next.js before any route handler runs: a redirect to the path it
        // routes, which is then guarded, or its own error page for a bad escape
        expect(reply.status).toBe(own);
        if (own === 308 && variant.startsWith('/')) {
          expect(reply.headers.location).toBe('/api/events');
          expect((await send(running[name]!.port, '/api/events')).status).toBe(401);
        }
        return;
      }
    }
    expect([400, 401, 404]).toContain(reply.status);
    expect(reply.headers['content-type']).toBe('application/problem+json');
  });
});

/** The compositions on a Fetch host, whose router reads the path of the same Web `Request`. */
const FETCH_HOSTS = [
  'fetch on @hono/node-server, mount + router',
  'hono 4, app.use("/api/*", toHono(...))',
  'hono 4, app.use(toHono(mount("/api", ...)))',
];

describe('what each composition answers', () => {
  const status = async (host: string, target: string) =>
    (await send(running[host]!.port, target)).status;

  it.each([
    [
      'guards every spelling Express routes to /api/events (case-insensitive)',
      [
        'express 5, app.use("/api", toExpress(...))',
        'express 5, toExpress(mount("/api", ...))',
        'express 4, toExpress(mount("/api", ...))',
      ],
      ['/API/events', '/Api/Events'],
      401,
    ],
    [
      'guards every path Fastify decodes to /api/events',
      ['fastify 5, fastifyPortico under a prefix', 'fastify 5, toFastify(mount("/api", ...)) hook'],
      ['/%61pi/events', '/api/ev%65nts'],
      401,
    ],
    [
      'refuses what readers take apart differently with a 400 problem, on every adapter',
      [
        'node:http, mount + router',
        'express 5, toExpress(mount("/api", ...))',
        'koa 3, toKoa(mount("/api", ...))',
        'fastify 5 lax router, toFastify(mount("/api", ...)) hook',
      ],
      ['/api%2Fevents', '/x/../api/events', '//api/events', '/api%5Cevents'],
      400,
    ],
    [
      'guards the dot segments a Fetch host has resolved before anyone reads the path (URL parser)',
      FETCH_HOSTS,
      ['/x/../api/events', '/./api/events', '/%2e%2e/api/events'],
      401,
    ],
    [
      'refuses on Fetch hosts what readers take apart differently with a 400 problem',
      FETCH_HOSTS.filter((host) => !host.includes('/api/*')),
      ['/api%2Fevents', '//api/events', '/api%5Cevents'],
      400,
    ],
    [
      'leaves to Hono what its router does not route under /api/* (no route either: 404)',
      FETCH_HOSTS.filter((host) => host.includes('/api/*')),
      ['/api%2Fevents', '//api/events', '/api%5Cevents'],
      404,
    ],
    [
      'guards on Next.js, in the catch-all, what Next does not route to the wrapped route',
      [NEXT_HOST],
      ['/API/events', '/Api/Events', '/api;x=1/events', '/api/events.'],
      401,
    ],
    [
      'refuses on Next.js what readers take apart differently with a 400 problem',
      [NEXT_HOST],
      ['/api%2Fevents', '/%2Fapi/events', '/api%5Cevents'],
      400,
    ],
  ])('%s', async (_what, names, targets, expected) => {
    for (const host of names) {
      for (const target of targets) {
        expect(await status(host, target), `${host} ${target}`).toBe(expected);
      }
    }
  });

  it('covers a `;` parameter on the prefix, which a router may cut off', async () => {
    expect(
      await status('fastify 5 lax router, toFastify(mount("/api", ...)) hook', '/api;x=1'),
    ).toBe(401);
    expect(await status('node:http, mount + router', '/api;jsessionid=1/events')).toBe(401);
  });

  it('lets caseSensitive: true keep to one spelling where the host router does too', async () => {
    const host = 'express 5 case sensitive, toExpress(mount(..., { caseSensitive: true }))';
    expect(await status(host, '/API/events')).toBe(404);
    expect(await status(host, '/api/events')).toBe(401);
  });
});
