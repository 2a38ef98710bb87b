/**
 * A bound, not a server: bare node:http (the floor's own answer) after 10 µs of busy CPU per
 * request. Its ratio tells what any server adding 10 µs of work per request to bare node:http
 * can reach in this run, so how much of its own work a target such as "0.60 of bare node:http"
 * leaves to a whole stack on this machine.
 */
import { serveJsonFloor } from '../lib/bare.js';
import { API_KEY_OWNER, BUSY_MICROSECONDS } from './shared.js';

const BUSY_NS = BigInt(BUSY_MICROSECONDS * 1000);

serveJsonFloor('/api/me', () => {
  const until = process.hrtime.bigint() + BUSY_NS;
  while (process.hrtime.bigint() < until) {
    // busy: the work a server would do, without its allocations
  }
  return { ...API_KEY_OWNER, method: 'api_key' };
});
