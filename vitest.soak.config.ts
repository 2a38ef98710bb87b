/**
 * The soak tests: `npm run test:soak` runs the long forms, `test/soak/*.soak.ts` (a few
 * minutes in all, on 127.0.0.1 only), one file at a time so that each has the machine:
 *
 * - ws.soak.ts: 10,000 WebSocket clients (in child processes) on the channel protocol for
 *   60 s, heartbeats, pings and a broadcast every 100 ms that every client must receive; all
 *   closed with 1000; the server's RSS and heap used back within 10 % of the baseline.
 * - sse.soak.ts: 5 rounds of 5,000 event streams opened and dropped; after each, no stream,
 *   hub subscription, handle, timer or listener left.
 * - rest.soak.ts: 60 s of mixed REST load on the reference server; no 5xx, no connection
 *   error; the p99 latency recorded.
 *
 * Results go to test-results/soak/<scenario>-long.json. The short forms (`test/soak/*.test.ts`,
 * the same scenarios smaller and shorter) run in `npm test`, whose config only includes
 * `*.test.ts`. The servers (test/soak/server.ts, the reference server) run in processes of
 * their own, so that their memory is measured alone; the debug surface (forced GC, memory,
 * handles, timers) is the soak server's IPC channel, in test/soak/ only.
 */
import { defineConfig } from 'vitest/config';
import base from './vitest.config.ts';

export default defineConfig({
  // the same `portico` aliases as vitest.config.ts (not merged: its `include` would be kept)
  resolve: base.resolve,
  test: {
    include: ['test/soak/**/*.soak.ts'],
    testTimeout: 300_000,
    hookTimeout: 120_000,
    pool: 'forks',
    fileParallelism: false,
  },
});
