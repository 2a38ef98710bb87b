// Maintenance mode: while it is on, the routes behind it answer 503 with `Retry-After` and a
// problem (RFC 9110 §15.6.4) before doing any work; switched on and off at run time.
import type { Middleware } from '../core/compose.js';
import type { Duration } from '../core/duration.js';
import { serviceUnavailable } from '../core/errors/errors.js';
import type { HttpError } from '../core/errors/http-error.js';
import { assertKnownOptions, durationOption, invalidOption } from '../internal/options.js';

/** Options of {@link maintenanceMode}. */
export interface MaintenanceOptions {
  /** Whether maintenance is on from the start. @defaultValue `false` */
  enabled?: boolean;
  /**
   * When clients should come back, in milliseconds: sent as `Retry-After` in whole seconds.
   * @defaultValue `120_000` (2 minutes)
   */
  retryAfter?: Duration;
  /** The problem's `detail`. @defaultValue `'The service is under maintenance.'` */
  detail?: string;
}

/** The middleware of {@link maintenanceMode}, with its switch. */
export interface Maintenance extends Middleware {
  /** Whether requests are refused now. */
  readonly enabled: boolean;
  /** Turns maintenance on, with another `retryAfter` (milliseconds) if given. */
  enable(options?: { retryAfter?: number }): void;
  /** Turns maintenance off: requests go through again. */
  disable(): void;
}

const OPTIONS = [
  'enabled',
  'retryAfter',
  'detail',
] as const satisfies readonly (keyof MaintenanceOptions)[];
const OWNER = 'maintenanceMode()';

/**
 * A switch for planned maintenance: while it is on, every request that reaches the middleware
 * is answered 503 with `Retry-After` and a problem (`ERR_MAINTENANCE`) before anything else
 * runs; a WebSocket upgrade given it in its `middleware` gets the same 503 and no 101, an
 * event stream no stream. Mount it where maintenance applies (say `/api`), and leave out what
 * must still answer (health checks, discovery). `enable()` and `disable()` switch it at run
 * time.
 *
 * @example
 * ```ts
 * const maintenance = maintenanceMode({ retryAfter: 300_000 });
 * const app = toNodeListener([mount('/api', maintenance), router]);
 * process.on('SIGUSR2', () => (maintenance.enabled ? maintenance.disable() : maintenance.enable()));
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-15.6.4 | RFC 9110 §15.6.4}
 */
export function maintenanceMode(options: MaintenanceOptions = {}): Maintenance {
  assertKnownOptions(OWNER, options, OPTIONS);
  const { detail = 'The service is under maintenance.' } = options;
  if (typeof detail !== 'string' || detail === '') {
    throw invalidOption(`${OWNER}: \`detail\` must be a non-empty string`);
  }
  if (options.enabled !== undefined && typeof options.enabled !== 'boolean') {
    throw invalidOption(`${OWNER}: \`enabled\` must be a boolean`);
  }
  const refusalAfter = (retryAfter: number): HttpError =>
    serviceUnavailable(retryAfter / 1000, detail, { code: 'ERR_MAINTENANCE' });
  let enabled = options.enabled ?? false;
  let refusal = refusalAfter(durationOption(OWNER, 'retryAfter', options.retryAfter, 120_000));

  const middleware: Middleware = function maintenance(_req, _res, next) {
    if (enabled) throw refusal;
    return next();
  };
  return Object.defineProperties(middleware, {
    enabled: { get: () => enabled, enumerable: true },
    enable: {
      value(change: { retryAfter?: number } = {}) {
        if (change.retryAfter !== undefined) {
          refusal = refusalAfter(durationOption(OWNER, 'retryAfter', change.retryAfter, 0));
        }
        enabled = true;
      },
    },
    disable: {
      value() {
        enabled = false;
      },
    },
  }) as Maintenance;
}
