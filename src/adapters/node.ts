/**
 * `node:http` adapter: {@link toNodeListener} turns portico middleware into a request listener
 * for `http.createServer()` / `https.createServer()`, answering unmatched requests and errors
 * with Problem Details; {@link serve} runs a whole service on one, with what every service
 * needs at start and stop (a 503 while starting, bounded timeouts, a graceful close on
 * SIGTERM).
 *
 * @module portico/node
 */

export { type NodeListenerOptions, toNodeListener } from './node-listener.js';
export type {
  ServeAddress,
  ServeApp,
  ServeAppBuilder,
  ServeContext,
  ServiceApp,
} from './serve/app.js';
export { ListenError } from './serve/listen.js';
export type { ServeOptions } from './serve/options.js';
export {
  type Service,
  serve,
} from './serve/serve.js';
