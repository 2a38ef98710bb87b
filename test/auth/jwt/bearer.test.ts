import { createHash, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toNodeListener } from '../../../src/adapters/node.ts';
import { authenticate } from '../../../src/auth/authenticate.ts';
import { type JwtBearerOptions, jwtBearer } from '../../../src/auth/jwt/bearer.ts';
import type { Middleware } from '../../../src/core/compose.ts';
import { getPrincipal } from '../../../src/core/principal.ts';
import { sendJson } from '../../../src/core/send.ts';
import { tlsServerOptions } from '../../../src/http/https.ts';
import {
  closeAll,
  json,
  type Listening,
  listen,
  parseReply,
  rawRequest,
  request,
  serve,
} from '../../helpers/http.ts';
import { captureLogger } from '../../helpers/logger.ts';
import { AUDIENCE, ISSUER, makeKey, mint, now, type TestKey } from './jwt-fixtures.ts';

const me: Middleware = (req, res) =>
  sendJson(res, 200, { ...getPrincipal(req), claims: undefined });
const problemOf = (reply: { body: string }) =>
  json<{ type: string; title: string; status: number; detail: string }>(reply);

let key: TestKey;
let app: Listening;
const bearer = (options: Partial<JwtBearerOptions> = {}) =>
  jwtBearer({ publicKey: key.pem, issuer: ISSUER, audience: AUDIENCE, ...options });
const auth = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });

beforeAll(async () => {
  key = await makeKey('k1');
  app = await serve([authenticate([bearer()]), me]);
});
afterAll(closeAll);

describe('jwtBearer', () => {
  it('authenticates a good token and maps its claims', async () => {
    const token = await mint(key, {
      name: 'Alice',
      role: 'admin',
      scope: 'read:a write:a',
      azp: 'web',
    });
    const reply = await request(app, '/', auth(token));
    expect(reply.status).toBe(200);
    expect(json(reply)).toEqual({
      sub: 'alice',
      name: 'Alice',
      role: 'admin',
      scopes: ['read:a', 'write:a'],
      method: 'bearer',
      clientId: 'web',
      // a stream opened with the token ends at its exp
      expiresAt: (decodeJwt(token).exp ?? 0) * 1000,
    });
    const scp = await mint(key, { scp: ['read:b'], client_id: 'cli', azp: 'web' });
    expect(json(await request(app, '/', auth(scp)))).toMatchObject({
      scopes: ['read:b'],
      clientId: 'cli',
    });
    const lower = await request(app, '/', { headers: { authorization: `bearer ${token}` } });
    expect(lower.status).toBe(200);
  });

  it('answers no token, or Bearer alone, with 401 and a bare challenge', async () => {
    for (const headers of [{}, { authorization: 'Bearer' }, { authorization: 'Bearer   ' }]) {
      const reply = await request(app, '/', { headers });
      expect(reply.status).toBe(401);
      expect(reply.headers['www-authenticate']).toBe('Bearer realm="api"');
      expect(problemOf(reply).type).toBe('urn:portico:problem:authentication-required');
    }
  });

  it('leaves other schemes to other authenticators', async () => {
    const reply = await request(app, '/', { headers: { authorization: 'Basic YWxpY2U6eA==' } });
    expect(reply.status).toBe(401);
    expect(problemOf(reply).type).toMatch(/authentication-required$/);
    const glued = await request(app, '/', { headers: { authorization: 'Bearerxyz' } });
    expect(problemOf(glued).type).toMatch(/authentication-required$/);
  });

  it('answers a bad token with 401 invalid_token', async () => {
    for (const token of ['not.a.token', 'abc def', (await mint(key)).slice(0, -4)]) {
      const reply = await request(app, '/', auth(token));
      expect(reply.status).toBe(401);
      expect(reply.headers['www-authenticate']).toBe(
        'Bearer realm="api", error="invalid_token", error_description="The access token is not valid."',
      );
      const problem = problemOf(reply);
      expect(problem.type).toBe('urn:portico:problem:invalid-credentials');
      expect(problem.detail).toBe('The access token is not valid.');
      expect(reply.body).not.toContain(token);
    }
  });

  it('tells an expired token from an invalid one', async () => {
    const reply = await request(app, '/', auth(await mint(key, { exp: now() - 60 })));
    expect(reply.status).toBe(401);
    expect(reply.headers['www-authenticate']).toBe(
      'Bearer realm="api", error="invalid_token", error_description="The access token expired."',
    );
    const problem = problemOf(reply);
    expect(problem.type).toBe('urn:portico:problem:credentials-expired');
    expect(problem.title).toBe('Credentials expired');
    expect(problem.detail).toBe('The access token expired.');
  });

  it('refuses a token without sub, and what toPrincipal refuses', async () => {
    expect((await request(app, '/', auth(await mint(key, { sub: undefined })))).status).toBe(401);
    const custom = await serve([
      authenticate([
        bearer({
          realm: 'custom',
          toPrincipal: (payload) =>
            payload.sub === 'bob'
              ? undefined
              : { sub: `user:${payload.sub}`, scopes: [], method: 'bearer' },
        }),
      ]),
      me,
    ]);
    expect(json(await request(custom, '/', auth(await mint(key))))).toMatchObject({
      sub: 'user:alice',
    });
    const bob = await request(custom, '/', auth(await mint(key, { sub: 'bob' })));
    expect(bob.status).toBe(401);
    expect(bob.headers['www-authenticate']).toMatch(
      /^Bearer realm="custom", error="invalid_token"/,
    );
  });

  it('answers a token sent twice with 400 invalid_request', async () => {
    const token = await mint(key);
    const twice = parseReply(
      await rawRequest(
        app.port,
        `GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nAuthorization: Bearer ${token}\r\nConnection: close\r\n\r\n`,
      ),
    );
    expect(twice.status).toBe(400);
    expect(twice.headers['www-authenticate']).toBe('Bearer realm="api", error="invalid_request"');
    expect(twice.body).not.toContain(token);
    const mixed = parseReply(
      await rawRequest(
        app.port,
        `GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Basic YTpi\r\nauthorization: Bearer ${token}\r\nConnection: close\r\n\r\n`,
      ),
    );
    expect(mixed.status).toBe(400);
    const both = await request(app, `/?access_token=${token}`, auth(token));
    expect(both.status).toBe(400);
    expect(json(both).type).toBe('urn:portico:problem:invalid-request');
    expect(both.body).not.toContain(token);
    const queryOnly = await request(app, `/?a=1&access%5Ftoken=${token}`);
    expect(queryOnly.status).toBe(400);
  });

  it('answers 503 when the remote key set was never reachable, logging nothing secret', async () => {
    const down = await listen((_req, res) => res.writeHead(503).end());
    const log = captureLogger();
    const server = await serve(
      [
        authenticate([
          jwtBearer({ jwksUrl: `${down.url}/jwks`, issuer: ISSUER, audience: AUDIENCE }),
        ]),
        me,
      ],
      { logger: log },
    );
    const token = await mint(key);
    const reply = await request(server, '/', auth(token));
    expect(reply.status).toBe(503);
    expect(reply.headers['retry-after']).toBe('30');
    expect(reply.body).not.toContain(token);
    expect(log.errors).toHaveLength(1);
    const error = log.errors[0] as Error;
    expect((error as { code?: string }).code).toBe('ERR_JWT_KEYS_UNAVAILABLE');
    expect(`${error.stack} ${JSON.stringify(error)}`).not.toContain(token.slice(0, 20));
    expect(log.text()).not.toContain(token.slice(0, 20));
  });
});

describe('jwtBearer: certificate-bound tokens (RFC 8705)', () => {
  const fixture = (name: string) =>
    readFileSync(new URL(`../../fixtures/tls/${name}`, import.meta.url));
  const ca = fixture('ca.pem');
  const alice = { cert: fixture('client.pem'), key: fixture('client.key') };
  const stranger = { cert: fixture('client-other-ca.pem'), key: fixture('client-other-ca.key') };
  const thumbprint = (pem: Buffer) =>
    createHash('sha256').update(new X509Certificate(pem).raw).digest('base64url');
  let tls: Listening;

  beforeAll(async () => {
    const options = tlsServerOptions({
      cert: fixture('server.pem'),
      key: fixture('server.key'),
      ca,
    });
    tls = await listen(createHttpsServer(options, toNodeListener([authenticate([bearer()]), me])));
  });

  it('accepts a bound token only over TLS with the same, verified certificate', async () => {
    const token = await mint(key, { cnf: { 'x5t#S256': thumbprint(alice.cert) } });
    const ok = await request(tls, '/', { ...auth(token), tls: { ca, ...alice } });
    expect(ok.status).toBe(200);
    expect(json(ok).sub).toBe('alice');
    const again = await request(tls, '/', { ...auth(token), tls: { ca, ...alice } });
    expect(again.status).toBe(200);
    for (const tlsOptions of [{ ca }, { ca, ...stranger }]) {
      const refused = await request(tls, '/', { ...auth(token), tls: tlsOptions });
      expect(refused.status).toBe(401);
      expect(problemOf(refused).type).toMatch(/invalid-credentials$/);
    }
    expect((await request(app, '/', auth(token))).status).toBe(401);
  });

  it('refuses a token bound to another certificate', async () => {
    const token = await mint(key, { cnf: { 'x5t#S256': thumbprint(stranger.cert) } });
    const reply = await request(tls, '/', { ...auth(token), tls: { ca, ...stranger } });
    expect(reply.status).toBe(401);
    const other = await request(tls, '/', { ...auth(token), tls: { ca, ...alice } });
    expect(other.status).toBe(401);
  });

  it('accepts unbound tokens over TLS, with or without a client certificate', async () => {
    const token = await mint(key);
    expect((await request(tls, '/', { ...auth(token), tls: { ca } })).status).toBe(200);
    expect((await request(tls, '/', { ...auth(token), tls: { ca, ...alice } })).status).toBe(200);
  });
});
