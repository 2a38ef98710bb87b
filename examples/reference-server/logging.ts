import type { IncomingMessage } from 'node:http';
import pino from 'pino';
import { getPrincipal, type Middleware } from 'portico';
import { getRequestId } from 'portico/core';
import { getTraceContext, type Logger } from 'portico/diagnostics';

/** `LOG_LEVEL`: pino's levels, and `silent` for none. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * The service's logger: pino, JSON lines on stdout. Its lines never hold a credential: the
 * access log writes the path without its query, no header; portico's components write ids
 * and reason codes. As a second line of defence, fields that could only be secrets are
 * removed wherever they would appear.
 */
export function createLogger(level: LogLevel): Logger & pino.Logger {
  return pino({
    level,
    redact: {
      paths: [
        'req.headers',
        'res.headers',
        'req.query',
        'req.body',
        '*.password',
        '*.secret',
        '*.client_secret',
        '*.token',
        '*.access_token',
        '*.refresh_token',
        '*.id_token',
        '*.cookie',
        '*.authorization',
      ],
      remove: true,
    },
  });
}

/** The request target's path, without the query (which may hold an `api_key`, a token). */
function pathOf(req: IncomingMessage): string {
  const url = req.url ?? '/';
  const query = url.indexOf('?');
  return query === -1 ? url : url.slice(0, query);
}

/**
 * One access-log line per finished request, as pino-http writes them: `req` (`id`, `method`,
 * `url` without its query), `res` (`statusCode`), `responseTime` in ms, the principal's `sub`
 * once authenticated, and the W3C trace context's `traceId` and `spanId` when the request
 * carried one. `requestId()` runs before it.
 */
export function accessLog(
  logger: Logger & { isLevelEnabled?(level: string): boolean },
): Middleware {
  // a level above info (or silent) writes no access log: nothing to do per request
  if (logger.isLevelEnabled?.('info') === false) return (_req, _res, next) => next();
  return function accessLogMiddleware(req, res, next) {
    const started = performance.now();
    res.once('close', () => {
      const trace = getTraceContext(req);
      const sub = getPrincipal(req)?.sub;
      logger.info(
        {
          req: { id: getRequestId(req), method: req.method, url: pathOf(req) },
          res: { statusCode: res.statusCode },
          responseTime: Math.round((performance.now() - started) * 10) / 10,
          ...(sub !== undefined && { sub }),
          ...(trace !== undefined && { traceId: trace.traceId, spanId: trace.spanId }),
        },
        res.writableFinished ? 'request completed' : 'request aborted',
      );
    });
    return next();
  };
}
