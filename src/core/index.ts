/**
 * The core of portico: the middleware model ({@link compose}) over node's `IncomingMessage` and
 * `ServerResponse`, typed per-request values ({@link createContextKey}), the error hierarchy
 * and RFC 9457 Problem Details ({@link sendError}).
 *
 * @module portico/core
 */
export {
  compose,
  type Middleware,
  type Next,
} from './compose.js';
export {
  type ContextKey,
  createContextKey,
  getContextValue,
  getRequestId,
  setContextValue,
} from './context.js';
export type { Duration } from './duration.js';
export type { PorticoErrorCode } from './errors/codes.js';
export {
  badGateway,
  badRequest,
  conflict,
  contentTooLarge,
  type FieldError,
  forbidden,
  gatewayTimeout,
  gone,
  HttpError,
  type HttpErrorExtra,
  type HttpErrorOptions,
  internalError,
  methodNotAllowed,
  notAcceptable,
  notFound,
  notImplemented,
  PorticoError,
  PROBLEM_TYPE_BASE,
  preconditionFailed,
  preconditionRequired,
  serviceUnavailable,
  tooManyRequests,
  unauthorized,
  unprocessable,
  unsupportedMediaType,
} from './errors/errors.js';
export type { Jwk, JwkSet, JwtClaims, JwtHeader } from './jwt-types.js';
export {
  type ErrorHandlerOptions,
  PROBLEM_TYPE,
  type ProblemDetails,
  type RenderedError,
  renderError,
  sendError,
  toHttpError,
  toProblem,
} from './problem.js';
export {
  JSON_TYPE,
  send,
  sendJson,
  sendNoContent,
  sendRedirect,
} from './send.js';
