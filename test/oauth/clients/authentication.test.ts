import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendJson } from '../../../src/core/index.js';
import { readForm } from '../../../src/http/body/body.js';
import { createClientAuthenticator } from '../../../src/oauth/clients/authentication.js';
import { defineClient } from '../../../src/oauth/clients/client.js';
import { MemoryClientStore } from '../../../src/oauth/clients/store.js';
import { OAuthError, sendOAuthError } from '../../../src/oauth/protocol/errors.js';
import { singleParams } from '../../../src/oauth/protocol/parameters.js';
import { closeAll, json, type Listening, request, serve } from '../../helpers/http.js';

let server: Listening;

beforeAll(async () => {
  const clients = new MemoryClientStore([
    await defineClient({
      clientId: 'demo-service',
      secret: 'demo-service-secret',
      grantTypes: ['client_credentials'],
      redirectUris: [],
      scopes: ['read:messages'],
    }),
    await defineClient({
      clientId: 'demo-spa',
      grantTypes: ['authorization_code', 'refresh_token'],
      redirectUris: ['http://127.0.0.1:5173/callback'],
      scopes: ['openid', 'read:messages'],
    }),
  ]);
  const authenticate = createClientAuthenticator(clients);
  server = await serve(async (req, res) => {
    try {
      const client = await authenticate(req, singleParams(await readForm(req)));
      sendJson(res, 200, { clientId: client.clientId });
    } catch (err) {
      if (err instanceof OAuthError) sendOAuthError(res, err);
      else throw err;
    }
  });
});

afterAll(closeAll);

const form = { 'Content-Type': 'application/x-www-form-urlencoded' };
const basic = (id: string, secret: string) =>
  `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;
const post = (body: string, headers: Record<string, string> = {}) =>
  request(server, '/token', { method: 'POST', headers: { ...form, ...headers }, body });

describe('client authentication', () => {
  it('accepts client_secret_basic, form-decoding id and secret as oauth4webapi sends them', async () => {
    const plain = await post('grant_type=client_credentials', {
      Authorization: basic('demo-service', 'demo-service-secret'),
    });
    expect(json(plain)).toEqual({ clientId: 'demo-service' });
    const escaped = await post('grant_type=client_credentials', {
      Authorization: basic('demo%2Dservice', 'demo%2Dservice%2Dsecret'),
    });
    expect(escaped.status).toBe(200);
  });

  it('accepts client_secret_post, with ;charset=UTF-8 on the body', async () => {
    const reply = await post('client_id=demo-service&client_secret=demo-service-secret', {
      'Content-Type': 'application/x-www-form-urlencoded;charset=UTF-8',
    });
    expect(json(reply)).toEqual({ clientId: 'demo-service' });
  });

  it('accepts a public client with none, and refuses it with a secret', async () => {
    expect(json(await post('client_id=demo-spa'))).toEqual({ clientId: 'demo-spa' });
    const posing = await post('client_id=demo-spa&client_secret=guess');
    expect(posing.status).toBe(401);
    expect(json(posing)).toMatchObject({ error: 'invalid_client' });
  });

  it('answers invalid_client 401 with a Basic challenge when HTTP authentication was tried', async () => {
    for (const headers of [
      { Authorization: basic('demo-service', 'wrong') },
      { Authorization: basic('nobody', 'x') },
    ]) {
      const reply = await post('grant_type=client_credentials', headers);
      expect(reply.status).toBe(401);
      expect(reply.headers['www-authenticate']).toBe('Basic realm="token", error="invalid_client"');
      expect(reply.headers['content-type']).toBe('application/json');
      expect(reply.headers['cache-control']).toBe('no-store');
      expect(reply.headers.pragma).toBe('no-cache');
      expect(json(reply)).toEqual({
        error: 'invalid_client',
        error_description: 'Client authentication failed.',
      });
    }
    const missing = await post('client_id=demo-service');
    expect(missing.status).toBe(401);
    // every 401 names a scheme (RFC 9110 §15.5.2), also when the client used the form body
    expect(missing.headers['www-authenticate']).toBe('Basic realm="token", error="invalid_client"');
  });

  it('keeps refusing a wrong secret after the right one was cached', async () => {
    expect((await post('client_id=demo-service&client_secret=demo-service-secret')).status).toBe(
      200,
    );
    expect((await post('client_id=demo-service&client_secret=demo-service-secrex')).status).toBe(
      401,
    );
  });

  it('answers invalid_request for two methods at once or a repeated parameter', async () => {
    const both = await post('client_secret=demo-service-secret', {
      Authorization: basic('demo-service', 'demo-service-secret'),
    });
    expect(both.status).toBe(400);
    expect(json(both)).toMatchObject({ error: 'invalid_request' });
    const repeated = await post(
      'client_id=demo-service&client_id=demo-service&client_secret=demo-service-secret',
    );
    expect(json(repeated)).toMatchObject({ error: 'invalid_request' });
    const malformed = await post('x=1', { Authorization: 'Basic !!!' });
    expect(json(malformed)).toMatchObject({ error: 'invalid_request' });
  });

  it('refuses client definitions that cannot be right', async () => {
    await expect(
      defineClient({
        clientId: 'x',
        grantTypes: ['client_credentials'],
        redirectUris: [],
        scopes: [],
      }),
    ).rejects.toThrow(/confidential/);
    await expect(
      defineClient({
        clientId: 'x',
        grantTypes: ['authorization_code'],
        redirectUris: ['/relative'],
        scopes: [],
      }),
    ).rejects.toThrow(TypeError);
    await expect(
      defineClient({
        clientId: 'x',
        grantTypes: ['refresh_tokens'],
        redirectUris: [],
        scopes: [],
      }),
    ).rejects.toThrow(/unknown grant `refresh_tokens`. Did you mean `refresh_token`/);
  });
});
