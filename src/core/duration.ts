/**
 * A duration option: a number of milliseconds, or a string with an explicit unit.
 *
 * Every duration of portico is in milliseconds (as in node:http, ws and undici). A bare number
 * must be at least the option's floor (one second for most windows, ages, lifetimes and
 * tolerances, see "Duration floors" in docs/http.md), so that a value written in seconds out
 * of habit (`windowMs: 60`, `clockTolerance: 5`) is refused at construction rather than
 * silently taken as milliseconds. A string with a unit (`'ms'`, `'s'`, `'m'` or `'h'`) says
 * what it means and may be any value, sub-second ones included.
 *
 * @example
 * ```ts
 * rateLimit({ windowMs: 60_000, limit: 100 }); // one minute
 * rateLimit({ windowMs: '1m', limit: 100 }); // the same
 * createHub({ heartbeat: '500ms' }); // a real sub-second value, written unambiguously
 * ```
 */
export type Duration = number | `${number}${'ms' | 's' | 'm' | 'h'}`;
