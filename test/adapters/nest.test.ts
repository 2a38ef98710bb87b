// portico/nest in a NestJS 11 application on both of Nest's platforms (Express and Fastify),
// over real sockets: PorticoAuthGuard (the principal at req.user), @Scopes and @Roles, and
// PorticoExceptionFilter answering Nest's own exceptions and portico's as Problem Details.
// The classes are decorated by calling the decorators, as TypeScript's legacy decorators do.
import 'reflect-metadata';
import type { Server } from 'node:http';
import {
  Controller,
  ForbiddenException,
  Get,
  Module,
  NotFoundException,
  Req,
  UseGuards,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  PorticoAuthGuard,
  PorticoExceptionFilter,
  PorticoModule,
  Roles,
  Scopes,
} from '../../src/adapters/nest.js';
import { apiKeyAuth } from '../../src/auth/api-key/authenticator.js';
import { importApiKey, MemoryApiKeyStore } from '../../src/auth/api-key/store.js';
import { createCredentialGuard } from '../../src/auth/credential-guard.js';
import { jwtBearer } from '../../src/auth/jwt/bearer.js';
import type { Principal } from '../../src/core/principal.js';
import { silentLogger } from '../../src/diagnostics/index.js';
import { expectProblem, json, type Listening, listen, request } from '../helpers/http.js';

const KEY = 'nest-test-key-0123456789abcdef';
const SECRET = 'nest-test-secret-0123456789abcdefgh';

/** Applies legacy decorators to a method, as `@Get()` above it would. */
function decorate(target: object, name: string, ...decorators: MethodDecorator[]): void {
  const descriptor = Object.getOwnPropertyDescriptor(target, name)!;
  for (const decorator of decorators.reverse()) decorator(target, name, descriptor);
  Object.defineProperty(target, name, descriptor);
}

class ApiController {
  me(req: { user: Principal }) {
    return { sub: req.user.sub, method: req.user.method };
  }
  messages() {
    return { messages: [] };
  }
  admin() {
    return { admin: true };
  }
  missing() {
    throw new NotFoundException('No such message.');
  }
  denied() {
    throw new ForbiddenException();
  }
  boom() {
    throw new Error('db password is hunter2');
  }
}
Controller('api')(ApiController);
UseGuards(PorticoAuthGuard)(ApiController);
decorate(ApiController.prototype, 'me', Get('me'));
Req()(ApiController.prototype, 'me', 0);
decorate(ApiController.prototype, 'messages', Get('messages'), Scopes('read:messages'));
decorate(ApiController.prototype, 'admin', Get('admin'), Roles('admin'));
decorate(ApiController.prototype, 'missing', Get('missing'));
decorate(ApiController.prototype, 'denied', Get('denied'));
decorate(ApiController.prototype, 'boom', Get('boom'));

class OpenController {
  hello() {
    return { hello: 'world' };
  }
}
Controller('open')(OpenController);
decorate(OpenController.prototype, 'hello', Get('hello'));

const token = (claims: Record<string, unknown>) =>
  new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject('bob')
    .setIssuer('https://id.example')
    .setAudience('https://api.example')
    .setIssuedAt()
    .setExpirationTime('5m')
    .sign(new TextEncoder().encode(SECRET));

async function nestApp(
  platform: 'express' | 'fastify',
): Promise<{ close(): Promise<void> } & Listening> {
  const keys = new MemoryApiKeyStore();
  await importApiKey(keys, KEY, { owner: 'alice', scopes: [] });
  class AppModule {}
  Module({
    imports: [
      PorticoModule.forRoot({
        authenticators: [
          apiKeyAuth({ store: keys }),
          jwtBearer({
            secret: SECRET,
            issuer: 'https://id.example',
            audience: 'https://api.example',
          }),
        ],
        guard: createCredentialGuard(),
        logger: silentLogger,
      }),
    ],
    controllers: [ApiController, OpenController],
  })(AppModule);
  const adapter = platform === 'express' ? new ExpressAdapter() : new FastifyAdapter();
  const app = await NestFactory.create(AppModule, adapter, { logger: false });
  app.useGlobalFilters(app.get(PorticoExceptionFilter));
  await app.init();
  if (platform === 'fastify') await app.getHttpAdapter().getInstance().ready();
  const listening = await listen(app.getHttpServer() as Server);
  return { ...listening, close: () => app.close() };
}

describe.each(['express', 'fastify'] as const)('portico/nest on the %s platform', (platform) => {
  let app: Awaited<ReturnType<typeof nestApp>>;
  beforeAll(async () => {
    app = await nestApp(platform);
  });
  afterAll(() => app.close());

  it('puts the principal at req.user for an API key and a bearer token', async () => {
    const byKey = await request(app, '/api/me', { headers: { 'x-api-key': KEY } });
    expect(byKey.status).toBe(200);
    expect(json(byKey)).toEqual({ sub: 'alice', method: 'api_key' });
    const byToken = await request(app, '/api/me', {
      headers: { authorization: `Bearer ${await token({ scope: 'read:messages' })}` },
    });
    expect(json(byToken)).toEqual({ sub: 'bob', method: 'bearer' });
  });

  it('answers no credential with a 401 problem and a challenge per mechanism', async () => {
    const refused = await request(app, '/api/me');
    expectProblem(refused, 401);
    expect(refused.headers['www-authenticate']).toContain('ApiKey');
    expect(refused.headers['www-authenticate']).toContain('Bearer');
    expect((await request(app, '/open/hello')).status).toBe(200);
  });

  it('checks @Scopes (403 insufficient_scope) and @Roles (403 problem)', async () => {
    const without = await request(app, '/api/messages', { headers: { 'x-api-key': KEY } });
    expectProblem(without, 403);
    const withScope = await request(app, '/api/messages', {
      headers: { authorization: `Bearer ${await token({ scope: 'read:messages' })}` },
    });
    expect(withScope.status).toBe(200);
    const lacking = await request(app, '/api/messages', {
      headers: { authorization: `Bearer ${await token({ scope: 'other' })}` },
    });
    expectProblem(lacking, 403);
    expect(lacking.headers['www-authenticate']).toMatch(/error="insufficient_scope"/);
    expectProblem(await request(app, '/api/admin', { headers: { 'x-api-key': KEY } }), 403);
    const admin = await request(app, '/api/admin', {
      headers: { authorization: `Bearer ${await token({ role: 'admin' })}` },
    });
    expect(admin.status).toBe(200);
  });

  it("answers Nest's own exceptions and unknown errors as problems that hide internals", async () => {
    const missing = await request(app, '/api/missing', { headers: { 'x-api-key': KEY } });
    expectProblem(missing, 404);
    expect(json<{ detail: string }>(missing).detail).toBe('No such message.');
    expectProblem(await request(app, '/api/denied', { headers: { 'x-api-key': KEY } }), 403);
    const boom = await request(app, '/api/boom', { headers: { 'x-api-key': KEY } });
    expectProblem(boom, 500);
    expect(boom.body).not.toContain('hunter2');
    const nowhere = await request(app, '/nowhere?api_key=secret-in-the-query');
    expectProblem(nowhere, 404);
    expect(nowhere.body).not.toContain('secret-in-the-query'); // Nest's own message quotes the URL
  });

  it('throttles guessing: 10 wrong keys, then the right one is 429', async () => {
    const fresh = await nestApp(platform);
    try {
      for (let i = 0; i < 10; i++) {
        expectProblem(
          await request(fresh, '/api/me', { headers: { 'x-api-key': `guess-${i}` } }),
          401,
        );
      }
      const right = await request(fresh, '/api/me', { headers: { 'x-api-key': KEY } });
      expectProblem(right, 429);
      expect(Number(right.headers['retry-after'])).toBeGreaterThan(0);
    } finally {
      await fresh.close();
    }
  });
});
