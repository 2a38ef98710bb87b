import pino from 'pino';
import { getPrincipal, type Middleware } from 'portico';
import { getRequestId } from 'portico/core';
import { getTraceContext, type Logger, requestPath } from 'portico/diagnostics';

/** `LOG_LEVEL`: pino's levels, and `silent` for none. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * The service's logger: pino, JSON lines on stdout. Its lines never hold a credential: the
 * access log writes the request's path (no query, no scheme or authority), no header;
 * portico's components write ids and reason codes. As a second line of defence, fields that
 * could only be secrets are removed wherever they would appear.
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

/**
 * One access-log line per finished request, as pino-http writes them: `req` (`id`, `method`,
 * `url`: the request's path, without its query, which may hold an `api_key` or a token, and
 * without the scheme and authority of a target in absolute form, whose userinfo may hold a
 * password: `GET http://alice:secret@host/api/me?api_key=…` is logged as `/api/me`), `res`
 * (`statusCode`), `responseTime` in ms, the principal's `sub` once authenticated, and the W3C
 * trace context's `traceId` and `spanId` when the request carried one. `requestId()` runs
 * before it.
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
          req: { id: getRequestId(req), method: req.method, url: requestPath(req) },
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
