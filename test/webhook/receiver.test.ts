import { createServer, type Server } from 'node:http';
import express from 'express';
import Koa from 'koa';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expressErrorHandler, toExpress } from '../../src/adapters/express.js';
import { toKoa } from '../../src/adapters/koa.js';
import { toNodeListener } from '../../src/adapters/node.js';
import type { Middleware } from '../../src/core/compose.js';
import { getWebhook, verifyWebhooks } from '../../src/webhook/receiver.js';
import { generateWebhookSecret } from '../../src/webhook/secret.js';
import { webhookHeaders } from '../../src/webhook/signature.js';
import { closeAll, json, listen, request } from '../helpers/http.js';
import { captureLogger } from '../helpers/logger.js';

const SECRET = generateWebhookSecret();
const OLD_SECRET = generateWebhookSecret();
const LIMIT = 4096;
const BODY = JSON.stringify({ type: 'invoice.paid', data: { id: 'inv_1' } });

/** What the app behind the receiver answers: the verified webhook, as JSON. */
const echo: Middleware = (req, res) => {
  res.statusCode = 200;
  res.setHeader('Content-Type', 'application/json');
  res.end(JSON.stringify(getWebhook(req) ?? null));
};

const chain = () => [verifyWebhooks({ secret: [OLD_SECRET, SECRET], limit: LIMIT }), echo];
const log = captureLogger();
const errors = log.errors;

function nodeHost(): Server {
  return createServer(toNodeListener(chain(), { logger: log }));
}

function expressHost(): Server {
  const app = express();
  app.post('/hooks', toExpress(chain()));
  app.post('/parsed', express.json(), toExpress(chain()));
  app.post('/raw', express.raw({ type: 'application/json' }), toExpress(chain()));
  app.use(expressErrorHandler({ logger: log }));
  return createServer(app);
}

function koaHost(): Server {
  const app = new Koa();
  app.silent = true;
  app.use(toKoa(verifyWebhooks({ secret: [OLD_SECRET, SECRET], limit: LIMIT }), { logger: log }));
  app.use((ctx) => {
    ctx.status = 204;
    ctx.set('x-webhook', JSON.stringify(getWebhook(ctx.req)));
  });
  return createServer(app.callback());
}

const servers: Record<string, Server> = {};

beforeAll(async () => {
  servers['node:http'] = nodeHost();
  servers['express 5'] = expressHost();
  servers['koa 3'] = koaHost();
  await Promise.all(Object.values(servers).map((s) => listen(s)));
});

afterAll(closeAll);

function post(
  name: string,
  body: string | Buffer,
  headers: Record<string, string>,
  path = '/hooks',
) {
  return request(servers[name]!, path, {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json', ...headers },
  });
}

const fresh = (body: string | Buffer = BODY, secret: string | string[] = SECRET, id = 'msg_1') =>
  webhookHeaders(secret, { id, timestamp: Math.floor(Date.now() / 1000), body });

/** The verified webhook the app saw, whatever the host. */
function seen(reply: { status: number; headers: Record<string, unknown>; body: string }) {
  return reply.status === 204 ? JSON.parse(String(reply.headers['x-webhook'])) : json(reply);
}

function expectNoSecret(reply: { body: string; headers: Record<string, unknown> }) {
  const all = reply.body + JSON.stringify(reply.headers);
  for (const secret of [SECRET, OLD_SECRET]) expect(all).not.toContain(secret.slice(6));
}

describe.each(['node:http', 'express 5', 'koa 3'])('verifyWebhooks through %s', (name) => {
  it('passes a signed webhook on, with getWebhook(req)', async () => {
    const headers = fresh();
    const reply = await post(name, BODY, headers);
    expect([200, 204]).toContain(reply.status);
    expect(seen(reply)).toEqual({
      id: 'msg_1',
      timestamp: Number(headers['webhook-timestamp']),
      payload: JSON.parse(BODY),
    });
  });

  it('passes one signed with the old secret, or by the standardwebhooks package', async () => {
    expect([200, 204]).toContain((await post(name, BODY, fresh(BODY, OLD_SECRET))).status);
    const ts = new Date();
    const theirs = {
      'webhook-id': 'msg_theirs',
      'webhook-timestamp': String(Math.floor(ts.getTime() / 1000)),
      'webhook-signature': new Webhook(SECRET).sign('msg_theirs', ts, BODY),
    };
    const reply = await post(name, BODY, theirs);
    expect(seen(reply).id).toBe('msg_theirs');
  });

  it('answers a bad signature with a 401 problem and WWW-Authenticate: Webhook', async () => {
    const reply = await post(name, BODY, fresh(BODY, generateWebhookSecret()));
    expect(reply.status).toBe(401);
    expect(reply.headers['content-type']).toBe('application/problem+json');
    expect(reply.headers['www-authenticate']).toBe('Webhook');
    expect(json(reply)).toMatchObject({
      status: 401,
      type: 'urn:portico:problem:webhook-signature',
      instance: '/hooks',
    });
    expectNoSecret(reply);
  });

  it('answers a tampered body and an old timestamp with 401', async () => {
    const tampered = BODY.replace('inv_1', 'inv_2');
    expect((await post(name, tampered, fresh())).status).toBe(401);
    const old = webhookHeaders(SECRET, { id: 'm', timestamp: 1_600_000_000, body: BODY });
    const reply = await post(name, BODY, old);
    expect(reply.status).toBe(401);
    expect(json(reply).type).toBe('urn:portico:problem:webhook-timestamp');
  });

  it('answers missing headers with a 400 problem', async () => {
    const { 'webhook-signature': _, ...rest } = fresh();
    const reply = await post(name, BODY, rest);
    expect(reply.status).toBe(400);
    expect(reply.headers['content-type']).toBe('application/problem+json');
    expect(json(reply)).toMatchObject({ type: 'urn:portico:problem:webhook-headers' });
    expect(json(reply).detail).toContain('webhook-signature');
  });

  it('answers a signed body that is not JSON with 400', async () => {
    const text = 'not json';
    const reply = await post(name, text, fresh(text));
    expect(reply.status).toBe(400);
    expect(json(reply).type).toBe('urn:portico:problem:webhook-payload');
  });

  it('answers a body over the limit with 413, and another media type with 415', async () => {
    const big = JSON.stringify({ pad: 'x'.repeat(LIMIT) });
    expect((await post(name, big, fresh(big))).status).toBe(413);
    const chunked = [Buffer.from(big.slice(0, 100)), Buffer.from(big.slice(100))];
    const reply = await request(servers[name]!, '/hooks', {
      method: 'POST',
      body: chunked,
      headers: { 'content-type': 'application/json', ...fresh(big) },
    });
    expect(reply.status).toBe(413);
    const text = await post(name, BODY, { ...fresh(), 'content-type': 'text/plain' });
    expect(text.status).toBe(415);
    expect(text.headers['content-type']).toBe('application/problem+json');
  });

  it('verifies the exact bytes of a body that is not UTF-8', async () => {
    const bytes = Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0xff, 0x7d]);
    const reply = await post(name, bytes, fresh(bytes));
    expect(reply.status).toBe(400); // the signature matched; the bytes are not JSON
    expect(json(reply).type).toBe('urn:portico:problem:webhook-payload');
  });
});

describe('verifyWebhooks behind a body parser', () => {
  it('fails with a 500 whose cause tells the developer to mount it first', async () => {
    errors.length = 0;
    const reply = await post('express 5', BODY, fresh(), '/parsed');
    expect(reply.status).toBe(500);
    expect(reply.headers['content-type']).toBe('application/problem+json');
    expect(reply.body).not.toContain('body parser');
    expect(errors).toHaveLength(1);
    expect(String((errors[0] as Error).message)).toMatch(/before\s+any body parser/);
  });

  it('uses the Buffer that express.raw() left', async () => {
    const reply = await post('express 5', BODY, fresh(), '/raw');
    expect(reply.status).toBe(200);
    expect(json(reply).payload).toEqual(JSON.parse(BODY));
  });
});

describe('verifyWebhooks options', () => {
  it('refuses an invalid secret, option or value when built, without quoting the secret', () => {
    const bad = 'whsec_c2hvcnQ=';
    expect(() => verifyWebhooks({ secret: bad })).toThrow(TypeError);
    try {
      verifyWebhooks({ secret: bad });
    } catch (err) {
      expect((err as Error).message).not.toContain('c2hvcnQ');
      expect((err as { code?: string }).code).toBe('ERR_INVALID_ARG_VALUE');
    }
    expect(() => verifyWebhooks({ secret: SECRET, tolerence: 5 } as never)).toThrow(
      /Did you mean `tolerance`/,
    );
    expect(() => verifyWebhooks({ secret: SECRET, tolerance: -1 })).toThrow(TypeError);
    expect(() => verifyWebhooks({ secret: SECRET, limit: 1.5 })).toThrow(TypeError);
    expect(() => verifyWebhooks(undefined as never)).toThrow(TypeError);
  });

  it('has no webhook for a request that did not pass it', () => {
    expect(getWebhook({} as never)).toBeUndefined();
  });
});
