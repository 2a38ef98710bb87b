/**
 * Cross-origin resource sharing: the {@link cors} middleware, which answers preflights and
 * marks answers to allowed origins, and the origin allowlist matcher it shares with the
 * WebSocket upgrade's `Origin` check.
 *
 * @see {@link https://fetch.spec.whatwg.org/#http-cors-protocol | Fetch: the CORS protocol}
 * @module portico/cors
 */
export {
  type CorsOptions,
  cors,
  DEFAULT_CORS_ALLOWED_HEADERS,
  DEFAULT_CORS_EXPOSED_HEADERS,
  DEFAULT_CORS_METHODS,
  isPreflightRequest,
} from './cors.js';
export type {
  OriginAllowlist,
  OriginMatcher,
  OriginPredicate,
} from './origin.js';
