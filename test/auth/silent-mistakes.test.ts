// Issue 38: mistakes that started without complaint and then refused every credential with
// nothing logged. Each is now loud: at construction, or (requirePrincipal before
// authenticate()) with the challenges of the authenticators, or a warning.
import type { Server } from 'node:http';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { expressErrorHandler, toExpress } from '../../src/adapters/express.js';
import { authenticate } from '../../src/auth/authenticate.js';
import { basicAuth } from '../../src/auth/basic.js';
import { createDpopNonces } from '../../src/auth/dpop/nonce.js';
import { jwtBearer } from '../../src/auth/jwt/bearer.js';
import { createJwtVerifier } from '../../src/auth/jwt/jwt.js';
import { createIdTokenVerifier } from '../../src/auth/oidc.js';
import { createSessions } from '../../src/auth/session/session.js';
import { requirePrincipal } from '../../src/core/principal.js';
import { thrownTypeError as thrown } from '../helpers/errors.js';
import { closeAll, json, listen, request } from '../helpers/http.js';
import { captureLogger } from '../helpers/logger.js';

const SECRET = 'a-shared-secret-of-at-least-32-bytes!';
const ISSUER = 'https://id.example.test';
const AUDIENCE = 'https://api.example.test';
const UNSET = process.env.PORTICO_SURELY_UNSET_VARIABLE;

describe('an option given as undefined (an unset environment variable)', () => {
  it('jwtBearer({ secret: process.env.JWT_SECRET }) does not fall back to discovery', () => {
    const error = thrown(() => jwtBearer({ secret: UNSET, issuer: ISSUER, audience: AUDIENCE }));
    expect(error).toBeInstanceOf(TypeError);
    expect(error.code).toBe('ERR_INVALID_OPTION');
    expect(error.message).toMatch(
      /^jwtBearer\(\): `secret` is undefined: is its environment variable set\?/,
    );
  });

  it.each(['publicKey', 'jwks', 'jwksUrl', 'issuer'])('names %s', (name) => {
    const options = { issuer: ISSUER, audience: AUDIENCE, [name]: undefined };
    expect(() => jwtBearer(options)).toThrow(`jwtBearer(): \`${name}\` is undefined`);
    expect(() => createJwtVerifier(options)).toThrow(`\`${name}\` is undefined`);
  });

  it('createIdTokenVerifier({ jwksUrl: undefined }) and createDpopNonces({ secret: undefined })', () => {
    expect(() =>
      createIdTokenVerifier({ issuer: ISSUER, clientId: 'app', jwksUrl: UNSET }),
    ).toThrow('createIdTokenVerifier(): `jwksUrl` is undefined');
    expect(() => createDpopNonces({ secret: UNSET })).toThrow(
      'createDpopNonces(): `secret` is undefined',
    );
  });
});

describe('a forgotten await', () => {
  it('jwtBearer({ publicKey: somePromise })', () => {
    const key = Promise.resolve('-----BEGIN PUBLIC KEY-----');
    expect(() =>
      jwtBearer({ publicKey: key as never, issuer: ISSUER, audience: AUDIENCE }),
    ).toThrow('jwtBearer(): `publicKey` is a Promise: did you forget `await`?');
  });

  it('createSessions({ store: somePromise })', () => {
    expect(() =>
      createSessions({ allowedOrigins: [ISSUER], store: Promise.resolve({}) as never }),
    ).toThrow('createSessions(): `store` is a Promise: did you forget `await`?');
  });
});

describe('durations in seconds', () => {
  it('clockTolerance: 5 and maxTokenAge: 900 (jose counts seconds)', () => {
    const base = { secret: SECRET, issuer: ISSUER, audience: AUDIENCE };
    expect(() => jwtBearer({ ...base, clockTolerance: 5 })).toThrow(
      "jwtBearer(): `clockTolerance` is 5 ms, which looks like seconds: did you mean 5_000? (write '5ms' for 5 milliseconds)",
    );
    expect(() => jwtBearer({ ...base, maxTokenAge: 900 })).toThrow(
      'jwtBearer(): `maxTokenAge` is 900 ms, which looks like seconds: did you mean 900_000?',
    );
    // 0 is still "no tolerance", and a string with its unit may be anything
    expect(() => jwtBearer({ ...base, clockTolerance: 0 })).not.toThrow();
    expect(() => jwtBearer({ ...base, clockTolerance: '500ms' as never })).not.toThrow();
    expect(() => jwtBearer({ ...base, maxTokenAge: '15m' as never })).not.toThrow();
  });

  it('createSessions({ idleTimeout: 900 })', () => {
    const allowedOrigins = ['https://app.example.test'];
    expect(() => createSessions({ allowedOrigins, idleTimeout: 900 })).toThrow(
      'createSessions(): `idleTimeout` must be milliseconds, at least 1000',
    );
    expect(() => createSessions({ allowedOrigins, idleTimeout: '15m' })).not.toThrow();
  });
});

describe('requirePrincipal() without a principal, through Express over a socket', () => {
  let port: number;
  const emitted = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
  const log = captureLogger();

  beforeAll(async () => {
    const app = express();
    // registered before authenticate(): no authenticator ever sees this request
    app.get(
      '/early',
      toExpress((req, res) => {
        res.end(requirePrincipal(req).sub);
      }),
    );
    const basic = basicAuth({ verify: () => undefined, realm: 'api' });
    app.use(toExpress(authenticate([basic], { optional: true })));
    app.get(
      '/me',
      toExpress((req, res) => {
        res.end(requirePrincipal(req).sub);
      }),
    );
    app.use(expressErrorHandler({ logger: log }));
    port = (await listen(app as unknown as Server)).port;
  });

  afterAll(async () => {
    emitted.mockRestore();
    await closeAll();
  });

  it('answers with the challenges of the authenticators that ran', async () => {
    const reply = await request(port, '/me');
    expect(reply.status).toBe(401);
    expect(reply.headers['www-authenticate']).toBe('Basic realm="api", charset="UTF-8"');
    expect(json(reply).type).not.toBe('about:blank');
    expect(emitted).not.toHaveBeenCalled();
  });

  it('warns once that requirePrincipal ran before authenticate(), with the path, no query', async () => {
    const first = await request(port, '/early?token=secret-in-query');
    expect(first.status).toBe(401);
    await request(port, '/early');
    expect(emitted).toHaveBeenCalledTimes(1);
    const [message, options] = emitted.mock.calls[0]! as [string, { code: string }];
    expect(message).toMatch(/requirePrincipal\(\) ran before authenticate\(\)/);
    expect(message).toContain('(path /early)');
    expect(message).not.toContain('secret-in-query');
    expect(options.code).toBe('PORTICO_PRINCIPAL_BEFORE_AUTHENTICATE');
  });
});
