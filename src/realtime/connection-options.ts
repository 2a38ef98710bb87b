// The options every long-lived connection (WebSocket, event stream) shares, checked alike.
import { countOption } from '../internal/options.js';

/**
 * The longest delay a timer takes (2³¹ − 1 ms, about 24.8 days): node runs a longer one
 * after 1 ms, which would turn a heartbeat into a busy loop.
 */
export const MAX_TIMER_DELAY = 2 ** 31 - 1;

/**
 * The cap on connections per principal (`maxConnectionsPerPrincipal`): an integer ≥ 1, or
 * `Infinity` when unset.
 */
export function connectionCap(owner: string, value: unknown): number {
  return countOption(owner, 'maxConnectionsPerPrincipal', value, Number.POSITIVE_INFINITY);
}
