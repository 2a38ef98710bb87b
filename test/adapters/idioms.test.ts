// Framework idioms over real sockets: the principal where each framework looks for it
// (`req.user`, `ctx.state.user`, `request.user`), Koa's `app.on('error')` still told of the
// errors answered as problems, and a 405 on Express through a portico route table.

import express from 'express';
import express4 from 'express4';
import Fastify from 'fastify';
import Koa from 'koa';
import { afterAll, describe, expect, it } from 'vitest';
import {
  expressErrorHandler,
  expressMethodNotAllowed,
  expressNotFound,
  toExpress,
} from '../../src/adapters/express.js';
import { fastifyErrorHandler, fastifyPortico, toFastify } from '../../src/adapters/fastify.js';
import { type KoaState, toKoa } from '../../src/adapters/koa.js';
import { authenticate } from '../../src/auth/authenticate.js';
import type { Authenticator } from '../../src/auth/authenticator.js';
import { conflict } from '../../src/core/errors/errors.js';
import type { Principal } from '../../src/core/principal.js';
import { sendJson } from '../../src/core/send.js';
import { silentLogger } from '../../src/diagnostics/index.js';
import { requestId } from '../../src/http/request-id.js';
import { createRouter } from '../../src/http/routing/router.js';
import { closeAll, expectProblem, json, listen, request } from '../helpers/http.js';

const userHeader: Authenticator = {
  scheme: 'User',
  challenge: 'User realm="test"',
  authenticate(req) {
    const sub = req.headers['x-user'];
    return typeof sub === 'string' ? { sub, scopes: ['read:me'], method: 'test' } : undefined;
  },
};

const optionalAuth = () => authenticate([userHeader], { optional: true });
const asUser = { headers: { 'X-User': 'u-42' } };

afterAll(() => closeAll());

describe.each([
  ['express 5', express],
  ['express 4', express4 as unknown as typeof express],
])('%s', (_name, factory) => {
  async function app() {
    const app = factory();
    app.use(toExpress([optionalAuth()]));
    app.get('/me', (req, res) => {
      res.json({ sub: req.user?.sub ?? null, scopes: req.user?.scopes ?? null });
    });
    app.use(
      toExpress(
        createRouter({
          '/books': {
            GET: (_req, res) => sendJson(res, 200, []),
            POST: (_req, res) => sendJson(res, 201, {}),
          },
        }),
      ),
    );
    app.get('/native', (_req, res) => {
      res.json({});
    });
    app
      .route('/shelves')
      .get((_req, res) => {
        res.json([]);
      })
      .put((_req, res) => {
        res.status(204).end();
      })
      .all(expressMethodNotAllowed());
    app.use(expressNotFound());
    app.use(expressErrorHandler());
    return listen(app as unknown as Parameters<typeof listen>[0]);
  }

  it('puts the principal at req.user', async () => {
    const server = await app();
    expect(json(await request(server, '/me', asUser))).toEqual({
      sub: 'u-42',
      scopes: ['read:me'],
    });
    expect(json(await request(server, '/me'))).toEqual({ sub: null, scopes: null });
  });

  it('answers 405 with Allow for a wrong method on a portico route table', async () => {
    const server = await app();
    const wrong = await request(server, '/books', { method: 'DELETE' });
    expectProblem(wrong, 405);
    expect(wrong.headers.allow).toBe('GET, POST, HEAD, OPTIONS');
    const options = await request(server, '/books', { method: 'OPTIONS' });
    expect(options.status).toBe(204);
    expect(options.headers.allow).toBe('GET, POST, HEAD, OPTIONS');
    // Express's own routes answer a wrong method with a 404, as documented
    expectProblem(await request(server, '/native', { method: 'DELETE' }), 404);
  });

  it('answers 405 with Allow on an Express route ended by expressMethodNotAllowed', async () => {
    const server = await app();
    const wrong = await request(server, '/shelves', { method: 'DELETE' });
    expectProblem(wrong, 405);
    expect(wrong.headers.allow).toBe('GET, PUT, HEAD, OPTIONS');
    const options = await request(server, '/shelves', { method: 'OPTIONS' });
    expect(options.status).toBe(204);
    expect(options.headers.allow).toBe('GET, PUT, HEAD, OPTIONS');
    expect((await request(server, '/shelves')).status).toBe(200);
    expect((await request(server, '/shelves', { method: 'HEAD' })).status).toBe(200);
    expect((await request(server, '/shelves', { method: 'PUT' })).status).toBe(204);
  });
});

describe('koa 3', () => {
  function app(errors?: unknown[]) {
    const app = new Koa<KoaState>();
    app.use(toKoa([optionalAuth()], { logger: silentLogger }));
    app.use(async (ctx, next) => {
      if (ctx.path === '/boom') throw new Error('db down');
      if (ctx.path === '/conflict') ctx.throw(409, 'native');
      if (ctx.path === '/me') ctx.body = { sub: ctx.state.user?.sub ?? null };
      await next();
    });
    if (errors) app.on('error', (err, ctx) => errors.push({ err, path: ctx.path }));
    return app;
  }

  it('puts the principal at ctx.state.user', async () => {
    const server = await listen(app().callback());
    expect(json(await request(server, '/me', asUser))).toEqual({ sub: 'u-42' });
    expect(json(await request(server, '/me'))).toEqual({ sub: null });
  });

  it("tells app.on('error') of a 5xx answered as a problem, not of a 4xx", async () => {
    const errors: { err: unknown; path: string }[] = [];
    const server = await listen(app(errors).callback());
    expectProblem(await request(server, '/boom'), 500);
    expect(errors).toHaveLength(1);
    expect(errors[0]?.path).toBe('/boom');
    expect((errors[0]?.err as Error | undefined)?.message).toBe('db down');
    expectProblem(await request(server, '/conflict'), 409);
    expect(errors).toHaveLength(1);
  });

  it('tells it of an error thrown by portico middleware too', async () => {
    const errors: unknown[] = [];
    const koa = new Koa();
    koa.use(
      toKoa(
        () => {
          throw Object.assign(new Error('hidden'), { status: 503, expose: false });
        },
        { logger: silentLogger },
      ),
    );
    koa.on('error', (err) => errors.push(err));
    const server = await listen(koa.callback());
    expectProblem(await request(server, '/'), 503);
    expect((errors[0] as Error).message).toBe('hidden');
    expect(json(await request(server, '/')).detail).not.toContain('hidden');
  });

  it("does not make Koa's default listener log again what the logger logged", async () => {
    const koa = app();
    let defaultCalls = 0;
    koa.onerror = () => {
      defaultCalls += 1;
    };
    const server = await listen(koa.callback());
    expectProblem(await request(server, '/boom'), 500);
    expect(defaultCalls).toBe(0);
  });
});

describe('fastify 5', () => {
  it('puts the principal at request.user, declared with decorateRequest', async () => {
    const app = Fastify();
    // (the cast: @fastify/jwt, imported by the benchmarks, types `user` in this program)
    app.decorateRequest('user', null as never);
    app.addHook('onRequest', toFastify([optionalAuth()]));
    app.setErrorHandler(fastifyErrorHandler());
    app.get('/me', async (request) => {
      const user = (request as unknown as { user: Principal | null }).user;
      return { sub: user?.sub ?? null };
    });
    app.get('/conflict', async () => {
      throw conflict('Already there.');
    });
    await app.ready();
    const server = await listen(app.server);
    expect(json(await request(server, '/me', asUser))).toEqual({ sub: 'u-42' });
    expect(json(await request(server, '/me'))).toEqual({ sub: null });
    expectProblem(await request(server, '/conflict', asUser), 409);
  });

  it('registers as a plugin, kept to the context that registers it', async () => {
    const app = Fastify();
    await app.register(
      async (api) => {
        await api.register(fastifyPortico, { use: [requestId(), optionalAuth()] });
        api.get('/me', async (request) => {
          const user = (request as unknown as { user: Principal | null }).user;
          return { sub: user?.sub ?? null };
        });
        api.get('/conflict', async () => {
          throw conflict('Already there.');
        });
      },
      { prefix: '/api' },
    );
    app.get('/outside', async (request) => ({ user: 'user' in request }));
    await app.ready();
    const server = await listen(app.server);
    const me = await request(server, '/api/me', asUser);
    expect(json(me)).toEqual({ sub: 'u-42' });
    expect(me.headers['x-request-id']).toBeTruthy();
    expect(json(await request(server, '/api/me'))).toEqual({ sub: null });
    const conflicted = await request(server, '/api/conflict');
    expectProblem(conflicted, 409);
    expect(conflicted.headers['x-request-id']).toBeTruthy();
    expectProblem(await request(server, '/api/nowhere'), 404);
    // a sibling context: neither the middleware nor the handlers
    const outside = await request(server, '/outside', asUser);
    expect(outside.headers['x-request-id']).toBeUndefined();
    expect(json(outside)).toEqual({ user: false });
    const lost = await request(server, '/nowhere');
    expect(lost.status).toBe(404);
    expect(lost.headers['content-type']).toMatch(/^application\/json/);
  });

  it('validates its options once', async () => {
    const register = (options: unknown) =>
      Fastify()
        .register(fastifyPortico, options as never)
        .ready();
    await expect(register({ use: [], nope: 1 })).rejects.toThrow(TypeError);
    await expect(register({})).rejects.toThrow(/`use`/);
    await expect(register({ use: [], notFound: 'yes' })).rejects.toThrow(/notFound/);
  });
});
