// One portico chain hosted on every adapter the suites compare: node:http (toNodeListener),
// Express 5 (toExpress), Koa 3 (toKoa) and Fastify 5 (toFastify in an onRequest hook), each
// with its framework's not-found and error handling wired as the docs show.
import { createServer } from 'node:http';
import express from 'express';
import Fastify from 'fastify';
import Koa from 'koa';
import { expressErrorHandler, expressNotFound, toExpress } from '../../src/adapters/express.js';
import { fastifyErrorHandler, fastifyNotFound, toFastify } from '../../src/adapters/fastify.js';
import { toKoa } from '../../src/adapters/koa.js';
import { toNodeListener } from '../../src/adapters/node.js';
import type { Middleware } from '../../src/core/compose.js';
import { silentLogger } from '../../src/diagnostics/index.js';
import { notFoundHandler } from '../../src/http/routing/router.js';
import { type Listening, listen } from './http.js';

export { type BinaryReply, requestBytes } from './http.js';

/**
 * Hosts `chain()` (made anew for each adapter) on node:http, Express 5, Koa 3 and Fastify 5;
 * a request the chain does not answer gets each framework's 404. Close with `close()` (and
 * `closeAll()` for the node servers).
 */
export async function hostOnEveryAdapter(
  chain: () => Middleware | Middleware[],
): Promise<{ hosts: Record<string, Listening>; close(): Promise<void> }> {
  const hosts: Record<string, Listening> = {};
  const logger = silentLogger;
  hosts['node:http'] = await listen(toNodeListener(chain(), { logger }));

  const app = express();
  app.use(toExpress(chain()));
  app.use(expressNotFound());
  app.use(expressErrorHandler({ logger }));
  hosts['express 5'] = await listen(createServer(app));

  const koa = new Koa();
  koa.silent = true;
  koa.use(toKoa([chain(), notFoundHandler()].flat(), { logger }));
  hosts['koa 3'] = await listen(createServer(koa.callback()));

  const fastify = Fastify({ logger: false });
  fastify.addHook('onRequest', toFastify(chain(), { logger }));
  fastify.setNotFoundHandler(fastifyNotFound());
  fastify.setErrorHandler(fastifyErrorHandler({ logger }));
  await fastify.ready();
  hosts['fastify 5'] = await listen(fastify.server);
  return { hosts, close: () => fastify.close() };
}
