import { invalidOption } from '../internal/options.js';

/** The fields of one log line: what happened, never a credential. */
export type LogFields = Record<string, unknown>;

/**
 * The logger portico writes to: the part of pino's interface it uses, so a pino logger (or a
 * child of one) is passed as it is. Each line is `(fields, message)`; the fields always hold
 * `component` (`http`, `auth`, `oauth`, `ws`, `sse`, `realtime`, `redis`, `webhook`) and
 * `event` (as `request.failed`, `webhook.dead-lettered`), and, for a line about a request,
 * `requestId` (and `traceId`, `spanId` when the request carried a W3C `traceparent`). An
 * error is under `err`, as pino's serializer expects. No line holds a credential: no header
 * value, no query string, no body, no secret.
 *
 * @example
 * ```ts
 * import pino from 'pino';
 * import { toNodeListener } from 'portico';
 *
 * const logger = pino();
 * const listener = toNodeListener([], { logger });
 * ```
 */
export interface Logger {
  error(fields: LogFields, message: string): void;
  warn(fields: LogFields, message: string): void;
  info(fields: LogFields, message: string): void;
  debug(fields: LogFields, message: string): void;
  /** A logger adding `bindings` to every line. */
  child(bindings: LogFields): Logger;
}

const nothing = () => {};

/**
 * A logger that writes nothing.
 *
 * @example
 * ```ts
 * import { silentLogger } from 'portico/diagnostics';
 * import { toNodeListener } from 'portico';
 *
 * const listener = toNodeListener([], { logger: silentLogger });
 * ```
 */
export const silentLogger: Logger = Object.freeze({
  error: nothing,
  warn: nothing,
  info: nothing,
  debug: nothing,
  child: () => silentLogger,
});

function describe(fields: LogFields): string {
  const { component, event, err: _err, ...rest } = fields;
  const context = Object.entries(rest)
    .filter(([, value]) => value !== undefined)
    .map(([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`)
    .join(' ');
  const where = [component, event].filter((v) => v !== undefined).join(' ');
  return `[portico]${where === '' ? '' : ` ${where}`}${context === '' ? '' : ` (${context})`}`;
}

function stackOf(error: unknown): string {
  if (error instanceof Error) return error.stack ?? `${error.name}: ${error.message}`;
  return String(error);
}

function stderrLogger(bindings: LogFields): Logger {
  return Object.freeze({
    error(fields: LogFields, message: string) {
      const all = { ...bindings, ...fields };
      const err = all.err === undefined ? '' : `\n${stackOf(all.err)}`;
      process.stderr.write(`${describe(all)}: ${message}${err}\n`);
    },
    warn: nothing,
    info: nothing,
    debug: nothing,
    child: (more: LogFields) => stderrLogger({ ...bindings, ...more }),
  });
}

/**
 * What portico logs to when given no logger: nothing, except what is genuinely unexpected
 * (an error becoming a 5xx, a store failing under a background task), one line on stderr
 * with its stack. Pass a `logger` (pino) to get every level as structured lines.
 *
 * @example
 * ```ts
 * import { defaultLogger } from 'portico/diagnostics';
 *
 * defaultLogger.error({ component: 'app', event: 'boot.failed' }, 'could not start');
 * ```
 */
export const defaultLogger: Logger = stderrLogger({});

const LEVELS = ['error', 'warn', 'info', 'debug', 'child'] as const;

/**
 * A factory's `logger` option: a {@link Logger}, or the default.
 * @internal
 */
export function loggerOption(owner: string, value: unknown): Logger {
  if (value === undefined) return defaultLogger;
  if (
    typeof value !== 'object' ||
    value === null ||
    LEVELS.some((level) => typeof (value as Record<string, unknown>)[level] !== 'function')
  ) {
    throw invalidOption(
      `${owner}: \`logger\` must have error, warn, info, debug and child methods (a pino logger does)`,
    );
  }
  return value as Logger;
}

/**
 * Writes a line, and never throws: a failing logger must not break what it reports on.
 * @internal
 */
export function log(
  logger: Logger,
  level: 'error' | 'warn' | 'info' | 'debug',
  fields: LogFields,
  message: string,
): void {
  try {
    logger[level](fields, message);
  } catch {
    // the logger is broken: nothing better to do than go on
  }
}
