// One portico chain hosted on every adapter the suites compare: node:http (toNodeListener),
// Express 5 (toExpress), Koa 3 (toKoa), Fastify 5 (toFastify in an onRequest hook), the Fetch
// adapter (toFetchHandler) and Hono 4 (toHono), both on @hono/node-server, each with its
// framework's not-found and error handling wired as the docs show.
import { createServer } from 'node:http';
import { getRequestListener } from '@hono/node-server';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import Koa from 'koa';
import { expressErrorHandler, expressNotFound, toExpress } from '../../src/adapters/express.js';
import { fastifyErrorHandler, fastifyNotFound, toFastify } from '../../src/adapters/fastify.js';
import { toFetchHandler } from '../../src/adapters/fetch/index.js';
import { honoErrorHandler, honoNotFound, toHono } from '../../src/adapters/hono.js';
import { toKoa } from '../../src/adapters/koa.js';
import { toNodeListener } from '../../src/adapters/node.js';
import type { Middleware } from '../../src/core/compose.js';
import { silentLogger } from '../../src/diagnostics/index.js';
import { notFoundHandler } from '../../src/http/routing/router.js';
import { type Listening, listen } from './http.js';

export { type BinaryReply, requestBytes } from './http.js';

/** What `@hono/node-server` knows of the client: its node request's socket. */
export const nodeServerAddress = (_request: Request, env: unknown) =>
  (env as { incoming: { socket: { remoteAddress?: string } } }).incoming.socket.remoteAddress;

/**
 * Hosts `chain()` (made anew for each adapter) on node:http, Express 5, Koa 3, Fastify 5,
 * the Fetch adapter and Hono 4;
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

  const fetch = toFetchHandler(chain(), { logger, clientAddress: nodeServerAddress });
  hosts.fetch = await listen(createServer(getRequestListener(fetch)));

  const hono = new Hono();
  hono.use(toHono(chain(), { logger }));
  hono.notFound(honoNotFound());
  hono.onError(honoErrorHandler({ logger }));
  hosts['hono 4'] = await listen(createServer(getRequestListener(hono.fetch)));
  return { hosts, close: () => fastify.close() };
}
