/**
 * Fetch adapter: portico middleware for a Web `Request`, answering a Web `Response`
 * ({@link toFetchHandler}), for Fetch-style hosts on Node: Hono, Next.js route handlers,
 * servers shaped like `Bun.serve`. The middleware run on node's own request and response, so
 * they behave as on `node:http`.
 *
 * @module portico/fetch
 */

export {
  type FetchHandler,
  type FetchHandlerOptions,
  incomingOf,
  principalOf,
  toFetchHandler,
  type WebHandler,
} from './handler.js';
