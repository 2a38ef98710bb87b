// One mistake in a request body, one problem on every host: portico's readJson on node:http
// and Koa, express.json() on Express 5 and 4, Fastify 5's own JSON parser. Each host limits
// bodies to 1024 bytes.
import { createServer } from 'node:http';
import express from 'express';
import express4 from 'express4';
import Fastify, { type FastifyInstance } from 'fastify';
import Koa from 'koa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expressErrorHandler, expressNotFound, toExpress } from '../../src/adapters/express.js';
import { fastifyErrorHandler, fastifyNotFound, toFastify } from '../../src/adapters/fastify.js';
import { toKoa } from '../../src/adapters/koa.js';
import { toNodeListener } from '../../src/adapters/node.js';
import type { Middleware } from '../../src/core/compose.js';
import { sendJson } from '../../src/core/send.js';
import { silentLogger } from '../../src/diagnostics/index.js';
import { readJson } from '../../src/http/body/body.js';
import { requestId } from '../../src/http/request-id.js';
import { createRouter, notFoundHandler } from '../../src/http/routing/router.js';
import { closeAll, expectProblem, type Listening, listen, request } from '../helpers/http.js';

const LIMIT = 1024;
const logger = silentLogger;

/** The portico chain in front of every host; node:http and Koa read the body with readJson. */
const front = (): Middleware[] => [requestId()];
const echo = (): Middleware =>
  createRouter({
    '/echo': {
      POST: async (req, res) => sendJson(res, 201, await readJson(req, { limit: LIMIT })),
    },
  });

function expressApp(factory: typeof express) {
  const app = factory();
  app.use(toExpress(front()));
  app.use(factory.json({ limit: LIMIT }));
  app.post('/echo', (req, res) => {
    res.status(201).json(req.body);
  });
  app.use(expressNotFound());
  app.use(expressErrorHandler({ logger }));
  return createServer(app);
}

const hosts: Record<string, Listening> = {};
let fastify: FastifyInstance;

beforeAll(async () => {
  hosts['node:http'] = await listen(toNodeListener([...front(), echo()], { logger }));
  hosts['express 5'] = await listen(expressApp(express));
  hosts['express 4'] = await listen(expressApp(express4 as unknown as typeof express));
  const koa = new Koa();
  koa.silent = true;
  koa.use(toKoa([...front(), echo(), notFoundHandler()], { logger }));
  hosts['koa 3'] = await listen(createServer(koa.callback()));
  fastify = Fastify({ logger: false, bodyLimit: LIMIT });
  fastify.addHook('onRequest', toFastify(front(), { logger }));
  fastify.post('/echo', async (request, reply) => reply.code(201).send(request.body));
  fastify.setNotFoundHandler(fastifyNotFound());
  fastify.setErrorHandler(fastifyErrorHandler({ logger }));
  await fastify.ready();
  hosts['fastify 5'] = await listen(fastify.server);
});

afterAll(async () => {
  await fastify.close();
  await closeAll();
});

const JSON_TYPE = { 'Content-Type': 'application/json' };
const post = (host: string, body: string, headers: Record<string, string> = JSON_TYPE) =>
  request(hosts[host]!, '/echo', { method: 'POST', headers, body });

const EVERY = ['node:http', 'express 5', 'express 4', 'koa 3', 'fastify 5'];
/** The hosts whose parser says where the JSON broke (it keeps the text). */
const LOCATING = ['node:http', 'express 5', 'express 4', 'koa 3'];
/** The hosts whose parser reads `charset` and `Content-Encoding` (Fastify ignores them). */
const STRICT_HEADERS = ['node:http', 'express 5', 'express 4', 'koa 3'];

describe.each(EVERY)('through %s', (host) => {
  it('reads a valid body', async () => {
    const res = await post(host, '{"a":[1,2]}');
    expect(res.status).toBe(201);
    expect(JSON.parse(res.body)).toEqual({ a: [1, 2] });
  });

  it('answers invalid JSON with urn:portico:problem:invalid-json, hiding the body and parser', async () => {
    const res = await post(host, '{"password":"hunter2",}');
    const problem = expectProblem(res, 400, 'invalid-json');
    expect(problem).toMatchObject({ title: 'Bad Request', instance: '/echo' });
    expect(problem.requestId).toBe(res.headers['x-request-id']);
    expect(problem.detail).toMatch(/^The request body is not valid JSON/);
    expect(res.body).not.toMatch(/hunter2|password|Unexpected|Expected|content-type|FST_/i);
  });

  it('answers a body over the limit with a 413 problem', async () => {
    const res = await post(host, JSON.stringify({ a: 'x'.repeat(2 * LIMIT) }));
    const problem = expectProblem(res, 413);
    expect(problem.type).toBe('about:blank');
    expect(problem.detail).toMatch(/^The request body is larger than the limit/);
    expect(res.body).not.toMatch(/entity|FST_/i);
  });
});

describe.each(LOCATING)('through %s, with the text at hand', (host) => {
  it('says where the JSON broke, by line and column', async () => {
    const one = expectProblem(await post(host, '{"a":1,}'), 400, 'invalid-json');
    expect(one.detail).toBe(
      'The request body is not valid JSON: syntax error at line 1, column 8 (position 7).',
    );
    const three = expectProblem(await post(host, '{\n  "a": 1,\n}'), 400, 'invalid-json');
    expect(three.detail).toBe(
      'The request body is not valid JSON: syntax error at line 3, column 1 (position 12).',
    );
  });

  it('names the limit a body went over', async () => {
    const res = await post(host, JSON.stringify({ a: 'x'.repeat(2 * LIMIT) }));
    expect(expectProblem(res, 413).detail).toBe(
      `The request body is larger than the limit of ${LIMIT} bytes.`,
    );
  });
});

describe.each(STRICT_HEADERS)('through %s, reading charset and Content-Encoding', (host) => {
  it('answers a charset other than UTF-8 with the same 415', async () => {
    const res = await post(host, '{}', { 'Content-Type': 'application/json; charset=latin1' });
    expect(expectProblem(res, 415)).toMatchObject({
      type: 'about:blank',
      detail: 'The charset latin1 is not supported; send UTF-8.',
    });
  });

  it('answers an unknown content coding with the same 415 and Accept-Encoding', async () => {
    const res = await post(host, '{}', { ...JSON_TYPE, 'Content-Encoding': 'x-unknown' });
    expect(expectProblem(res, 415).detail).toBe(
      'Content-Encoding is not accepted here: send the request body unencoded (identity).',
    );
    expect(res.headers['accept-encoding']).toBe('identity');
  });
});

describe('what only some parsers refuse', () => {
  it('an empty JSON body: the same problem from readJson and Fastify (express.json() takes it as {})', async () => {
    const details = [];
    for (const host of ['node:http', 'fastify 5']) {
      const problem = expectProblem(await post(host, ''), 400, 'invalid-json');
      details.push(problem.detail);
    }
    expect(details).toEqual([
      'The request body is not valid JSON: it ends too early.',
      'The request body is not valid JSON: it ends too early.',
    ]);
    expect((await post('express 5', '')).status).toBe(201);
  });

  it('JSON that is not an object or array, to the strict express.json()', async () => {
    for (const host of ['express 5', 'express 4']) {
      const problem = expectProblem(await post(host, '"secret text"'), 400, 'invalid-json');
      expect(problem.detail).toBe(
        'The request body is not valid JSON here: send an object or an array.',
      );
    }
  });

  it('a media type Fastify has no parser for is a 415 problem, as readJson answers', async () => {
    const headers = { 'Content-Type': 'application/x-unknown' };
    for (const host of ['node:http', 'fastify 5']) {
      const problem = expectProblem(await post(host, 'hi', headers), 415);
      expect(problem.type).toBe('about:blank');
    }
    const fastifyProblem = expectProblem(await post('fastify 5', 'hi', headers), 415);
    expect(fastifyProblem.detail).toBe(
      'The Content-Type of the request body is not accepted here.',
    );
  });
});
