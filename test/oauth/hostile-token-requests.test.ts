// The token endpoint under attack (setup in hostile-fixtures.ts): client authentication mixed
// or malformed (RFC 6749 §2.3), two Authorization lines, unknown grant types, methods other
// than POST and bodies that are not a UTF-8 form.
import type { OutgoingHttpHeaders } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeAll, request } from '../helpers/http.js';
import {
  app,
  codeFor,
  FORM,
  failures,
  post,
  SECRETS,
  startHostileServer,
  WEB,
} from './hostile-fixtures.js';
import { basic, expectError, expectTokens } from './token-fixtures.js';

beforeAll(startHostileServer);
afterAll(async () => {
  await closeAll();
  expect(failures).toEqual([]);
});

describe('client authentication (RFC 6749 §2.3)', () => {
  const cc = 'grant_type=refresh_token&refresh_token=x';
  it.each<[string, string, OutgoingHttpHeaders, string]>([
    [
      'Basic and client_secret in the body',
      `${cc}&client_id=web&client_secret=${SECRETS.web}`,
      { Authorization: basic('web', SECRETS.web!) },
      'invalid_request',
    ],
    [
      'Basic and only client_secret in the body',
      `${cc}&client_secret=${SECRETS.web}`,
      { Authorization: basic('web', SECRETS.web!) },
      'invalid_request',
    ],
    [
      'Basic for web, client_id other in the body',
      `${cc}&client_id=other`,
      { Authorization: basic('web', SECRETS.web!) },
      'invalid_request',
    ],
    [
      'Basic for web, the secret of other in the body',
      `${cc}&client_secret=${SECRETS.other}`,
      { Authorization: basic('web', SECRETS.web!) },
      'invalid_request',
    ],
    [
      'malformed Basic and body credentials',
      `${cc}&client_id=web&client_secret=${SECRETS.web}`,
      { Authorization: 'Basic !!!' },
      'invalid_request',
    ],
    [
      'Basic without a colon',
      cc,
      { Authorization: `Basic ${Buffer.from('web').toString('base64')}` },
      'invalid_request',
    ],
    [
      'Basic with a bad escape',
      cc,
      { Authorization: `Basic ${Buffer.from('web:%zz').toString('base64')}` },
      'invalid_request',
    ],
    ['Basic with a wrong secret', cc, { Authorization: basic('web', 'wrong') }, 'invalid_client'],
    ['Basic with an empty id', cc, { Authorization: basic('', SECRETS.web!) }, 'invalid_client'],
    [
      'the web secret posted for other',
      `${cc}&client_id=other&client_secret=${SECRETS.web}`,
      {},
      'invalid_client',
    ],
    [
      'a secret posted for the public client',
      `${cc}&client_id=spa&client_secret=x`,
      {},
      'invalid_client',
    ],
    ['no authentication at all', cc, {}, 'invalid_client'],
  ])('%s', async (_name, body, headers, error) => {
    const reply = await post('/token', body, headers);
    expectError(reply, error);
    expect(reply.body).not.toContain(SECRETS.web);
  });

  it('accepts Basic with the same client_id repeated in the body', async () => {
    const issued = await codeFor();
    const body = new URLSearchParams({
      grant_type: 'authorization_code',
      code: issued.code,
      redirect_uri: WEB,
      code_verifier: issued.verifier,
      client_id: 'web',
    });
    expectTokens(
      await post('/token', body.toString(), { Authorization: basic('web', SECRETS.web!) }),
    );
  });

  it('refuses two Authorization header lines as invalid_request', async () => {
    const reply = await post('/token', cc, {
      Authorization: [basic('other', SECRETS.other!), basic('web', SECRETS.web!)],
    });
    expectError(reply, 'invalid_request');
  });
});

describe('grant types, methods and bodies', () => {
  const auth = () => ({ Authorization: basic('web', SECRETS.web!) });
  it.each([
    'password',
    'implicit',
    'client_credentials ',
    'AUTHORIZATION_CODE',
    'urn:ietf:params:oauth:grant-type:jwt-bearer',
    'urn:ietf:params:oauth:grant-type:token-exchange',
    'urn:ietf:params:oauth:grant-type:saml2-bearer',
    '__proto__',
    'constructor',
    'toString',
    'hasOwnProperty',
    'a'.repeat(5000),
  ])('answers grant_type=%s with unsupported_grant_type', async (grantType) => {
    const reply = await post(
      '/token',
      new URLSearchParams({ grant_type: grantType }).toString(),
      auth(),
    );
    expectError(reply, 'unsupported_grant_type');
  });

  it.each(['GET', 'PUT', 'DELETE', 'PATCH'])(
    'answers %s /token with 405 and Allow',
    async (method) => {
      const reply = await request(app, '/token?grant_type=client_credentials', {
        method,
        headers: auth(),
      });
      expect(reply.status).toBe(405);
      expect(String(reply.headers.allow)).toMatch(/\bPOST\b/);
      expect(reply.body).not.toContain('access_token');
    },
  );

  it.each<[string, OutgoingHttpHeaders, string | Buffer]>([
    [
      'JSON',
      { 'Content-Type': 'application/json' },
      '{"grant_type":"refresh_token","refresh_token":"x"}',
    ],
    ['text/plain', { 'Content-Type': 'text/plain' }, 'grant_type=refresh_token&refresh_token=x'],
    [
      'multipart',
      { 'Content-Type': 'multipart/form-data; boundary=b' },
      '--b\r\nContent-Disposition: form-data; name="grant_type"\r\n\r\nrefresh_token\r\n--b--\r\n',
    ],
    ['no Content-Type', {}, 'grant_type=refresh_token&refresh_token=x'],
    [
      'a latin-1 form',
      { 'Content-Type': 'application/x-www-form-urlencoded; charset=iso-8859-1' },
      'grant_type=refresh_token',
    ],
    [
      'gzip content coding',
      { ...FORM, 'Content-Encoding': 'gzip' },
      Buffer.from([0x1f, 0x8b, 0, 0]),
    ],
    ['bytes that are not UTF-8', FORM, Buffer.from([0x67, 0x3d, 0xc3, 0x28])],
    ['a body over 64 KiB', FORM, `grant_type=refresh_token&pad=${'a'.repeat(70 * 1024)}`],
    ['an empty form', FORM, ''],
  ])('answers a body that is %s with invalid_request 400', async (_name, headers, body) => {
    const reply = await request(app, '/token', {
      method: 'POST',
      headers: { ...auth(), ...headers },
      body,
    });
    expectError(reply, 'invalid_request');
  });
});
