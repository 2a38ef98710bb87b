// OAuthError's statuses by error code, and the answer of sendOAuthError over a real socket:
// no-store, application/json, and the Basic challenge a 401 carries when it names none.
import { afterAll, describe, expect, it } from 'vitest';
import type { Middleware } from '../../../src/core/compose.js';
import {
  CLIENT_CHALLENGE,
  OAuthError,
  sendOAuthError,
} from '../../../src/oauth/protocol/errors.js';
import { closeAll, json, request, serve } from '../../helpers/http.js';

afterAll(closeAll);

describe('OAuthError', () => {
  it('is 401 for invalid_client and invalid_token, 500 for server_error, 503 for temporarily_unavailable, else 400', () => {
    expect(new OAuthError('invalid_client', 'x').status).toBe(401);
    expect(new OAuthError('invalid_token', 'x').status).toBe(401);
    expect(new OAuthError('server_error', 'x').status).toBe(500);
    expect(new OAuthError('temporarily_unavailable', 'x').status).toBe(503);
    expect(new OAuthError('invalid_grant', 'x').status).toBe(400);
    expect(new OAuthError('invalid_client', 'x', { status: 400 }).status).toBe(400);
  });
});

describe('sendOAuthError', () => {
  it('gives a 401 without a challenge of its own the Basic one of the token endpoint', async () => {
    expect(CLIENT_CHALLENGE).toBe('Basic realm="token", error="invalid_client"');
    let error = new OAuthError('invalid_client', 'Client authentication failed.');
    const endpoint: Middleware = (_req, res) => sendOAuthError(res, error);
    const server = await serve(endpoint);
    const reply = await request(server, '/token', { method: 'POST' });
    expect(reply.status).toBe(401);
    expect(reply.headers['www-authenticate']).toBe('Basic realm="token", error="invalid_client"');
    expect(reply.headers['cache-control']).toBe('no-store');
    expect(reply.headers['content-type']).toBe('application/json');
    expect(json(reply)).toStrictEqual({
      error: 'invalid_client',
      error_description: 'Client authentication failed.',
    });
    error = new OAuthError('invalid_token', 'Gone.', {
      headers: { 'WWW-Authenticate': 'Bearer realm="x"' },
    });
    const own = await request(server, '/token', { method: 'POST' });
    expect(own.status).toBe(401);
    expect(own.headers['www-authenticate']).toBe('Bearer realm="x"');
  });
});
