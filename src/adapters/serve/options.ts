import type { ServerOptions as HttpsServerOptions } from 'node:https';
import type { Middleware } from '../../core/compose.js';
import type { Duration } from '../../core/duration.js';
import { type Logger, loggerOption } from '../../core/logger.js';
import { middlewareOption } from '../../core/raw-answer.js';
import { DEFAULT_BODY_LIMIT } from '../../http/body/body.js';
import type { TlsServerInput } from '../../http/https.js';
import {
  assertKnownOptions,
  booleanOption,
  countOption,
  durationOption,
  functionOption,
  invalidOption,
} from '../../internal/options.js';

/**
 * Options of {@link serve}.
 *
 * @example
 * ```ts
 * const options: ServeOptions = {
 *   port: 8080,
 *   host: '0.0.0.0',
 *   edge: [requestId(), securityHeaders()],
 *   gracePeriod: 20_000,
 * };
 * ```
 */
export interface ServeOptions {
  /**
   * The TCP port to listen on; `0` picks a free one (`ready` and `url` then tell which).
   * @defaultValue `3000`
   */
  port?: number;
  /**
   * The address to listen on: `'0.0.0.0'` (or `'::'`) for every interface, as a container
   * needs; the default keeps the service to this machine.
   * @defaultValue `'127.0.0.1'`
   */
  host?: string;
  /**
   * Serve HTTPS (and `wss`) only, with these certificates: built by `tlsServerOptions`
   * (TLS 1.2 or later, forward-secret AEAD ciphers; with `ca`, client certificates are asked
   * for, not required).
   * @defaultValue none: plain HTTP
   */
  tls?: TlsServerInput;
  /**
   * node's own server options (`requireHostHeader`, `maxHeaderSize`, `joinDuplicateHeaders`,
   * and with `tls` the TLS ones, as `SNICallback`), given to `createServer` as they are, after
   * those of `tls`. The timeouts are set from this interface's own options.
   * @defaultValue none
   */
  serverOptions?: HttpsServerOptions;
  /**
   * Middleware for the answers `serve` gives itself: the 503 while the app is being built, a
   * request node's parser refused (400, 408, 414, 431), a WebSocket handshake refused while
   * starting or closing, a `CONNECT`. Each must call `next()`; the headers it sets (a request
   * id, the security headers) go on those answers. Put the same middleware at the head of
   * your app, and every answer of the service carries them.
   * @defaultValue none
   */
  edge?: Middleware | readonly Middleware[];
  /**
   * Where `serve` logs a signal received (info), a close step that failed or tracked work
   * that rejected (error), and a close forced at the end of `gracePeriod` (warn).
   * @defaultValue `defaultLogger` (errors on stderr)
   */
  logger?: Logger;
  /**
   * Milliseconds a client has to send a request's headers, else a 408 (node's
   * `server.headersTimeout`); at most `requestTimeout` unless that is `0`.
   * @defaultValue `20_000`
   */
  headersTimeout?: Duration;
  /**
   * Milliseconds a client has to send a whole request, body included, else a 408 (node's
   * `server.requestTimeout`); `0` for no limit (long uploads). A response may take longer.
   * @defaultValue `30_000`
   */
  requestTimeout?: Duration;
  /**
   * Milliseconds an idle keep-alive connection is kept open (node's
   * `server.keepAliveTimeout`); keep it above the idle timeout of a proxy or load balancer
   * in front, which must close first.
   * @defaultValue `5_000`
   */
  keepAliveTimeout?: Duration;
  /**
   * The largest request body any route reads, in bytes: a request with
   * `Expect: 100-continue` that declares more gets no `100 Continue` (`checkContinue`), so
   * its client never sends the body the route refuses with 413.
   * @defaultValue `DEFAULT_BODY_LIMIT` (1 MiB)
   */
  bodyLimit?: number;
  /**
   * The `Retry-After` of the 503 answered while the app is being built, in milliseconds
   * (sent in whole seconds, rounded up).
   * @defaultValue `1_000`
   */
  startingRetryAfter?: Duration;
  /**
   * Milliseconds a close waits for the requests in flight, the tracked work and the app's
   * `close()`; then every connection still open is closed (`closeAllConnections`) and the
   * close resolves. Keep it under the time your platform gives before SIGKILL (Kubernetes:
   * `terminationGracePeriodSeconds`, 30 s by default).
   * @defaultValue `10_000`
   */
  gracePeriod?: Duration;
  /**
   * The signals that start a graceful close; `[]` for none. Their listeners are removed once
   * the service closes, whatever closed it.
   * @defaultValue `['SIGTERM', 'SIGINT']`
   */
  signals?: readonly NodeJS.Signals[];
  /**
   * After a close that a signal started, end the process (`process.exit`, with
   * `process.exitCode` or 0), so that a timer or a client left open cannot keep it running.
   * @defaultValue `true`
   */
  exitOnSignal?: boolean;
  /**
   * Called when one of `signals` arrives, before the close starts (a line for the logs).
   * @defaultValue none
   */
  onSignal?: (signal: NodeJS.Signals) => void;
}

/** {@link ServeOptions}, checked, with their defaults. */
export interface ServeSettings {
  port: number;
  host: string;
  tls: TlsServerInput | undefined;
  serverOptions: HttpsServerOptions;
  edge: Middleware | undefined;
  logger: Logger;
  headersTimeout: number;
  requestTimeout: number;
  keepAliveTimeout: number;
  bodyLimit: number;
  startingRetryAfter: number;
  gracePeriod: number;
  signals: readonly NodeJS.Signals[];
  exitOnSignal: boolean;
  onSignal: ((signal: NodeJS.Signals) => void) | undefined;
}

export const OWNER = 'serve()';

const KNOWN_OPTIONS = [
  'port',
  'host',
  'tls',
  'serverOptions',
  'edge',
  'logger',
  'headersTimeout',
  'requestTimeout',
  'keepAliveTimeout',
  'bodyLimit',
  'startingRetryAfter',
  'gracePeriod',
  'signals',
  'exitOnSignal',
  'onSignal',
] as const satisfies readonly (keyof ServeOptions)[];

const DAY = 24 * 60 * 60 * 1000;

function signalsOption(value: unknown): readonly NodeJS.Signals[] {
  if (value === undefined) return ['SIGTERM', 'SIGINT'];
  if (
    !Array.isArray(value) ||
    value.some((s) => typeof s !== 'string' || !/^SIG[A-Z0-9]+$/.test(s))
  ) {
    throw invalidOption(`${OWNER}: \`signals\` must be an array of signal names, as ['SIGTERM']`);
  }
  return [...new Set(value as NodeJS.Signals[])];
}

function objectOption<T extends object>(name: string, value: T | undefined): T | undefined {
  if (value !== undefined && (typeof value !== 'object' || value === null)) {
    throw invalidOption(`${OWNER}: \`${name}\` must be an object`);
  }
  return value;
}

function hostOption(value: unknown): string {
  if (value === undefined) return '127.0.0.1';
  if (typeof value !== 'string' || value === '') {
    throw invalidOption(`${OWNER}: \`host\` must be a non-empty string, as '0.0.0.0'`);
  }
  return value;
}

function timeouts(options: ServeOptions) {
  const headersTimeout = durationOption(OWNER, 'headersTimeout', options.headersTimeout, 20_000, {
    min: 1,
    max: DAY,
  });
  const requestTimeout = durationOption(OWNER, 'requestTimeout', options.requestTimeout, 30_000, {
    max: DAY,
  });
  if (requestTimeout !== 0 && headersTimeout > requestTimeout) {
    throw invalidOption(
      `${OWNER}: \`headersTimeout\` (${headersTimeout}) must not exceed \`requestTimeout\` (${requestTimeout})`,
    );
  }
  const keepAlive = options.keepAliveTimeout;
  const keepAliveTimeout = durationOption(OWNER, 'keepAliveTimeout', keepAlive, 5_000, {
    max: DAY,
  });
  return { headersTimeout, requestTimeout, keepAliveTimeout };
}

/** Checks `options` once, when the service is made. */
export function serveSettings(options: ServeOptions): ServeSettings {
  assertKnownOptions(OWNER, options, KNOWN_OPTIONS);
  return {
    port: countOption(OWNER, 'port', options.port, 3000, { min: 0, max: 65_535 }),
    host: hostOption(options.host),
    tls: objectOption('tls', options.tls),
    serverOptions: objectOption('serverOptions', options.serverOptions) ?? {},
    edge: middlewareOption(OWNER, options.edge),
    logger: loggerOption(OWNER, options.logger),
    ...timeouts(options),
    bodyLimit: countOption(OWNER, 'bodyLimit', options.bodyLimit, DEFAULT_BODY_LIMIT, { min: 0 }),
    startingRetryAfter: durationOption(
      OWNER,
      'startingRetryAfter',
      options.startingRetryAfter,
      1_000,
      { max: DAY },
    ),
    gracePeriod: durationOption(OWNER, 'gracePeriod', options.gracePeriod, 10_000, { max: DAY }),
    signals: signalsOption(options.signals),
    exitOnSignal: booleanOption(OWNER, 'exitOnSignal', options.exitOnSignal, true),
    onSignal: functionOption(OWNER, 'onSignal', options.onSignal),
  };
}
