// readOAuthForm() over a real socket at its 64 KiB limit: a form up to it is read, one byte
// more is invalid_request with the body error's Connection: close.
import { afterAll, describe, expect, it } from 'vitest';
import type { Middleware } from '../../../src/core/compose.js';
import { sendJson } from '../../../src/core/send.js';
import { OAuthError, sendOAuthError } from '../../../src/oauth/protocol/errors.js';
import { OAUTH_FORM_LIMIT, readOAuthForm } from '../../../src/oauth/protocol/form.js';
import { closeAll, json, request, serve } from '../../helpers/http.js';

afterAll(closeAll);

describe('readOAuthForm', () => {
  it('reads a form of 64 KiB and refuses one byte more', async () => {
    expect(OAUTH_FORM_LIMIT).toBe(65_536);
    const endpoint: Middleware = async (req, res) => {
      try {
        const form = await readOAuthForm(req);
        sendJson(res, 200, { length: form.get('pad')?.length });
      } catch (error) {
        if (!(error instanceof OAuthError)) throw error;
        sendOAuthError(res, error);
      }
    };
    const server = await serve(endpoint);
    const post = (body: string) =>
      request(server, '/token', {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        body,
      });
    const fits = `pad=${'a'.repeat(65_536 - 4)}`;
    const read = await post(fits);
    expect(read.status, read.body).toBe(200);
    expect(json(read)).toEqual({ length: 65_532 });
    const small = await post('pad=abc');
    expect(json(small)).toEqual({ length: 3 });
    const refused = await post(`${fits}a`);
    expect(refused.status).toBe(400);
    expect(json(refused).error).toBe('invalid_request');
    expect(refused.headers.connection).toBe('close');
  });
});
