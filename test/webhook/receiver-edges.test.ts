// The edges of the webhook receiver over real sockets: which JSON media types it takes, the
// limit of a Buffer express.raw() left, what a host sees when a body parser ran first, and
// the messages of its options.
import { createServer } from 'node:http';
import express, { type NextFunction, type Request, type Response } from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toExpress } from '../../src/adapters/express.js';
import { toNodeListener } from '../../src/adapters/node.js';
import type { Middleware } from '../../src/core/compose.js';
import { getWebhook, verifyWebhooks } from '../../src/webhook/receiver.js';
import { generateWebhookSecret } from '../../src/webhook/secret.js';
import { webhookHeaders } from '../../src/webhook/signature.js';
import { closeAll, json, type Listening, listen, request } from '../helpers/http.js';
import { captureLogger } from '../helpers/logger.js';

const SECRET = generateWebhookSecret();
const LIMIT = 256;
const BODY = '{"type":"ping"}';

const echo: Middleware = (req, res) => {
  res.statusCode = 200;
  res.setHeader('Content-Type', 'application/json');
  res.end(JSON.stringify(getWebhook(req) ?? null));
};

const log = captureLogger();
const caught: unknown[] = [];
let node: Listening;
let app: Listening;

beforeAll(async () => {
  node = await listen(
    createServer(
      toNodeListener([verifyWebhooks({ secret: SECRET, limit: LIMIT }), echo], { logger: log }),
    ),
  );
  const e = express();
  const chain = toExpress([verifyWebhooks({ secret: SECRET, limit: LIMIT }), echo]);
  e.post('/raw', express.raw({ type: () => true }), chain);
  e.post('/parsed', express.json(), chain);
  e.use((err: { status?: number }, _req: Request, res: Response, _next: NextFunction) => {
    caught.push(err);
    res.status(err.status ?? 500).end();
  });
  app = await listen(createServer(e));
});

afterAll(closeAll);

const fresh = (body: string) =>
  webhookHeaders(SECRET, { id: 'msg_1', timestamp: Math.floor(Date.now() / 1000), body });

function post(target: Listening, body: string, headers: Record<string, string>, path = '/') {
  return request(target, path, { method: 'POST', body, headers: { ...fresh(body), ...headers } });
}

describe('verifyWebhooks: the media type', () => {
  it.each([
    'application/json',
    'application/json; charset=utf-8',
    'application/json; charset=UTF-8',
    'application/json; charset=utf8',
    'Application/JSON',
    'application/cloudevents+json',
    'application/vnd.example+json; charset="utf-8"',
  ])('takes %s', async (type) => {
    const reply = await post(node, BODY, { 'content-type': type });
    expect(reply.status).toBe(200);
    expect(json(reply).payload).toEqual({ type: 'ping' });
  });

  it.each([
    'application/json; charset=latin1',
    'application/json; charset=utf-16',
    'text/plain',
    'application/jsonp',
    'application/json+xml',
    'application/json; charset',
    'json',
  ])('answers %s with a 415 problem, before reading the signature', async (type) => {
    const reply = await post(node, BODY, { 'content-type': type });
    expect(reply.status).toBe(415);
    expect(json(reply).detail).toBe('A webhook body must be JSON (Content-Type application/json).');
  });

  it('answers a request without a Content-Type with a 415 problem', async () => {
    const reply = await request(node, '/', { method: 'POST', body: BODY, headers: fresh(BODY) });
    expect(reply.status).toBe(415);
  });
});

describe('verifyWebhooks after express.raw()', () => {
  /** A JSON body of exactly `size` bytes. */
  const sized = (size: number) => {
    const body = `{"pad":"${'x'.repeat(size - 10)}"}`;
    expect(Buffer.byteLength(body)).toBe(size);
    return body;
  };

  it('takes a Buffer of exactly the limit, and refuses one byte more with a 413', async () => {
    const at = await post(app, sized(LIMIT), { 'content-type': 'application/json' }, '/raw');
    expect(at.status).toBe(200);
    caught.length = 0;
    const over = await post(app, sized(LIMIT + 1), { 'content-type': 'application/json' }, '/raw');
    expect(over.status).toBe(413);
    expect(caught).toEqual([
      expect.objectContaining({
        status: 413,
        message: `The request body is larger than the limit of ${LIMIT} bytes.`,
      }),
    ]);
  });

  it('fails with a 500 coded ERR_BODY_CONSUMED when a parser read the body first', async () => {
    caught.length = 0;
    const reply = await post(app, BODY, { 'content-type': 'application/json' }, '/parsed');
    expect(reply.status).toBe(500);
    expect(caught).toEqual([expect.objectContaining({ status: 500, code: 'ERR_BODY_CONSUMED' })]);
  });
});

describe('verifyWebhooks: options', () => {
  const message = (options: unknown) => {
    try {
      verifyWebhooks(options as never);
    } catch (err) {
      return (err as Error).message;
    }
    return undefined;
  };

  it('says options with a secret are required', () => {
    expect(message(null)).toBe('verifyWebhooks(): options with a `secret` are required.');
    expect(message('whsec_x')).toBe('verifyWebhooks(): options must be an object');
  });

  it('refuses a secret given as undefined or as a Promise, naming it', () => {
    expect(message({ secret: undefined })).toBe(
      'verifyWebhooks(): `secret` is undefined: is its environment variable set? (leave the option out when it is not meant)',
    );
    expect(message({ secret: Promise.resolve(SECRET) })).toMatch(
      /^verifyWebhooks\(\): `secret` is a Promise: did you forget `await`\?/,
    );
  });

  it('names the option in its messages, and takes a limit of 0', () => {
    expect(message({ secret: SECRET, tolerance: 1.5 })).toBe(
      'verifyWebhooks(): `tolerance` must be milliseconds, at least 0',
    );
    expect(message({ secret: SECRET, limit: -1 })).toBe(
      'verifyWebhooks(): `limit` must be an integer, at least 0',
    );
    expect(message({ secret: SECRET, limit: 0, tolerance: 0 })).toBeUndefined();
  });
});
