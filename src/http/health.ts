// Health endpoints: liveness (the process answers) and readiness (it can serve: every store
// it needs reachable, not in maintenance), for orchestrators and load balancers.
import type { Middleware } from '../core/compose.js';
import type { Duration } from '../core/duration.js';
import { serviceUnavailable } from '../core/errors/errors.js';
import { sendJson } from '../core/send.js';
import { assertKnownOptions, durationOption, invalidOption } from '../internal/options.js';
import type { Maintenance } from './maintenance.js';

/** A readiness check: resolves when the dependency is reachable, throws (or rejects) when not. */
export type HealthCheck = () => unknown;

/** Options of {@link healthChecks}. */
export interface HealthOptions {
  /**
   * What readiness depends on, by name: each resolves when its dependency answers (a Redis
   * `PING`, a database `SELECT 1`), throws or rejects when not.
   * @defaultValue none
   */
  checks?: Readonly<Record<string, HealthCheck>>;
  /** How long a check may take, in milliseconds, before it counts as failed. @defaultValue `2_000` */
  timeout?: Duration;
  /** A maintenance switch: while it is on, the service is not ready. @defaultValue none */
  maintenance?: Maintenance;
  /**
   * `Retry-After` of a 503 readiness answer, in milliseconds (whole seconds on the wire).
   * @defaultValue `5_000`
   */
  retryAfter?: Duration;
}

/** The two endpoints of {@link healthChecks}. */
export interface HealthEndpoints {
  /** `GET /healthz`: 200 `{"status":"ok"}` while the process answers at all. */
  readonly liveness: Middleware;
  /** `GET /readyz`: 200 with each check `ok`, or 503 with the ones that failed. */
  readonly readiness: Middleware;
}

const OPTIONS = [
  'checks',
  'timeout',
  'maintenance',
  'retryAfter',
] as const satisfies readonly (keyof HealthOptions)[];
const OWNER = 'healthChecks()';
const NO_STORE = { 'Cache-Control': 'no-store' };

/** Runs `check`, failing it after `timeout` milliseconds. */
async function passes(check: HealthCheck, timeout: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), timeout);
    timer.unref();
  });
  try {
    return await Promise.race([
      Promise.resolve()
        .then(check)
        .then(() => true),
      late,
    ]);
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Liveness and readiness endpoints. Liveness answers 200 `{"status":"ok"}` as long as the
 * process can answer. Readiness runs every check at once, each within `timeout`: all passing,
 * 200 `{"status":"ok","checks":{"redis":"ok"}}`; one failing (or maintenance on), 503 with
 * `Retry-After` and a problem whose `checks` member names each check `ok` or `failed` (never
 * the error itself, which may hold a host or a credential). Both are `Cache-Control:
 * no-store`, take no credential, and belong outside rate limits and maintenance.
 *
 * @example
 * ```ts
 * const health = healthChecks({ checks: { redis: () => redis.ping() }, maintenance });
 * createRouter({ '/healthz': { GET: health.liveness }, '/readyz': { GET: health.readiness } });
 * ```
 * @see {@link https://kubernetes.io/docs/tasks/configure-pod-container/configure-liveness-readiness-startup-probes/ | Kubernetes probes}
 */
export function healthChecks(options: HealthOptions = {}): HealthEndpoints {
  assertKnownOptions(OWNER, options, OPTIONS);
  const checks = Object.entries(options.checks ?? {});
  for (const [name, check] of checks) {
    if (typeof check !== 'function') {
      throw invalidOption(`${OWNER}: the check \`${name}\` must be a function`);
    }
  }
  const timeout = durationOption(OWNER, 'timeout', options.timeout, 2_000, { min: 1, floor: 100 });
  const retryAfter = durationOption(OWNER, 'retryAfter', options.retryAfter, 5_000);
  const { maintenance } = options;

  const liveness: Middleware = function liveness(_req, res) {
    sendJson(res, 200, { status: 'ok' }, NO_STORE);
  };
  const readiness: Middleware = async function readiness(_req, res) {
    const results = await Promise.all(checks.map(([, check]) => passes(check, timeout)));
    const report: Record<string, 'ok' | 'failed'> = {};
    checks.forEach(([name], i) => {
      report[name] = results[i] ? 'ok' : 'failed';
    });
    const inMaintenance = maintenance?.enabled === true;
    if (inMaintenance || results.includes(false)) {
      throw serviceUnavailable(
        retryAfter / 1000,
        inMaintenance ? 'The service is under maintenance.' : 'A dependency is unreachable.',
        {
          code: 'ERR_NOT_READY',
          headers: NO_STORE,
          extensions: { checks: report, ...(inMaintenance && { maintenance: true }) },
        },
      );
    }
    sendJson(res, 200, { status: 'ok', checks: report }, NO_STORE);
  };
  return Object.freeze({ liveness, readiness });
}
