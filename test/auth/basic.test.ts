import type { OutgoingHttpHeaders } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { authenticate } from '../../src/auth/authenticate.js';
import { basicAuth, parseBasicCredentials } from '../../src/auth/basic.js';
import type { Middleware } from '../../src/core/compose.js';
import { getPrincipal } from '../../src/core/principal.js';
import { sendJson } from '../../src/core/send.js';
import { closeAll, json, parseReply, rawRequest, request, serve } from '../helpers/http.js';

const echo: Middleware = (req, res) => sendJson(res, 200, getPrincipal(req) ?? null);
const CHALLENGE = 'Basic realm="api", charset="UTF-8"';
const b64 = (text: string | Buffer) =>
  (typeof text === 'string' ? Buffer.from(text, 'utf8') : text).toString('base64');

afterEach(closeAll);

/** Serves basicAuth with a verify that knows one user and records what it was given. */
async function setup() {
  const seen: [string, string][] = [];
  const server = await serve([
    authenticate([
      basicAuth({
        verify(username, password) {
          seen.push([username, password]);
          return username === 'Jürgen' && password === 'pässwörd:with:colons'
            ? { sub: username, scopes: [], method: 'basic' }
            : undefined;
        },
      }),
    ]),
    echo,
  ]);
  const call = (authorization?: string | string[]) =>
    request(server, '/', {
      headers: (authorization === undefined ? {} : { authorization }) as OutgoingHttpHeaders,
    });
  return { server, seen, call };
}

describe('basicAuth', () => {
  it('authenticates UTF-8 credentials whose password holds colons', async () => {
    const { call, seen } = await setup();
    const reply = await call(`Basic ${b64('Jürgen:pässwörd:with:colons')}`);
    expect(reply.status).toBe(200);
    expect(json(reply)).toEqual({ sub: 'Jürgen', scopes: [], method: 'basic' });
    expect(seen).toEqual([['Jürgen', 'pässwörd:with:colons']]);
  });

  it('takes the scheme in any case and normalises to NFC', async () => {
    const { call, seen } = await setup();
    const decomposed = 'Jürgen:pässwörd:with:colons'.normalize('NFD');
    expect(decomposed).not.toBe('Jürgen:pässwörd:with:colons');
    expect((await call(`basic ${b64(decomposed)}`)).status).toBe(200);
    expect((await call(`BASIC ${b64('Jürgen:pässwörd:with:colons')}`)).status).toBe(200);
    expect(seen[0]).toEqual(['Jürgen', 'pässwörd:with:colons']);
  });

  it('answers 401 with the UTF-8 challenge when no credentials or another scheme is sent', async () => {
    const { call, seen } = await setup();
    for (const authorization of [undefined, 'Bearer abc.def.ghi', 'Basicx dXNlcjpwdw==']) {
      const reply = await call(authorization);
      expect(reply.status).toBe(401);
      expect(reply.headers['www-authenticate']).toBe(CHALLENGE);
      expect(json(reply).type).toBe('urn:portico:problem:authentication-required');
    }
    expect(seen).toEqual([]);
  });

  it('answers 401 invalid-credentials, never 500, for every malformed credential', async () => {
    const { call, seen } = await setup();
    const malformed = [
      'Basic',
      'Basic !!!!',
      'Basic dXNlcjpwdw', // padding missing
      'Basic dXNlcjpwdx==', // non-zero padding bits (Buffer would decode it silently)
      'Basic dXNl cjpwdw==',
      'Basic dXNlcjpwdw==dXNl',
      `Basic ${b64('userpassword')}`, // no colon
      `Basic ${b64('')}`,
      `Basic ${b64(':password')}`, // empty user-id
      `Basic ${b64('us\u0000er:pw')}`,
      `Basic ${b64('user:p\tw')}`,
      `Basic ${b64('user:pw\u007f')}`,
      `Basic ${b64('user:pw\u0085')}`,
      `Basic ${b64(Buffer.from('J\u00fcrgen:p\u00e4ss', 'latin1'))}`, // latin-1, not UTF-8
      `Basic ${b64(Buffer.from([0x75, 0x3a, 0xed, 0xa0, 0x80]))}`, // UTF-8 encoded surrogate
      `Basic ${b64(`Jürgen:${'x'.repeat(7700)}`)}`, // ≈ 10 KB header
    ];
    for (const authorization of malformed) {
      const reply = await call(authorization);
      expect(reply.status, authorization.slice(0, 40)).toBe(401);
      expect(reply.headers['www-authenticate']).toBe(CHALLENGE);
      const problem = json(reply);
      expect(problem.type).toBe('urn:portico:problem:invalid-credentials');
      expect(reply.body).not.toContain(authorization.slice(6, 30) || '\u0000');
    }
    expect(seen).toEqual([]);
  });

  it('answers 401 invalid-credentials when verify refuses, never echoing the password', async () => {
    const { call, seen } = await setup();
    const reply = await call(`Basic ${b64('Jürgen:wrong-secret')}`);
    expect(reply.status).toBe(401);
    expect(json(reply).type).toBe('urn:portico:problem:invalid-credentials');
    expect(reply.body).not.toContain('wrong-secret');
    expect(seen).toEqual([['Jürgen', 'wrong-secret']]);
  });

  it('answers 401 for raw latin-1 bytes in the header', async () => {
    const { server } = await setup();
    const head = Buffer.concat([
      Buffer.from('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Basic '),
      Buffer.from([0xe4, 0xfc, 0x3d]),
      Buffer.from('\r\n\r\n'),
    ]);
    const reply = parseReply(await rawRequest(server.port, head));
    expect(reply.status).toBe(401);
    expect(reply.headers['www-authenticate']).toBe(CHALLENGE);
    expect(JSON.parse(reply.body).type).toBe('urn:portico:problem:invalid-credentials');
  });

  it('refuses two Authorization lines with 400', async () => {
    const { call } = await setup();
    const good = `Basic ${b64('Jürgen:pässwörd:with:colons')}`;
    const reply = await call([good, 'Basic eDp5']);
    expect(reply.status).toBe(400);
    expect(json(reply).type).toBe('urn:portico:problem:invalid-request');
  });

  it('quotes another realm and validates its options', () => {
    const verify = () => undefined;
    expect(basicAuth({ verify, realm: 'admin area' }).challenge).toBe(
      'Basic realm="admin area", charset="UTF-8"',
    );
    expect(basicAuth({ verify }).scheme).toBe('Basic');
    expect(() => basicAuth({ verfy: verify } as never)).toThrow(/Did you mean `verify`/);
    expect(() => basicAuth({} as never)).toThrow(TypeError);
  });
});

describe('parseBasicCredentials', () => {
  it('splits at the first colon', () => {
    expect(parseBasicCredentials(`Basic ${b64('a:b:c')}`)).toEqual({
      username: 'a',
      password: 'b:c',
    });
    expect(parseBasicCredentials(`Basic ${b64('a:')}`)).toEqual({ username: 'a', password: '' });
    expect(parseBasicCredentials(`Basic  ${b64('a:b')}`)).toEqual({ username: 'a', password: 'b' });
    expect(parseBasicCredentials('Bearer x')).toBeUndefined();
    expect(parseBasicCredentials(`Basic ${'A'.repeat(5000)}`)).toBeUndefined();
  });
});
