/**
 * The WebSocket soak, long form (`npm run test:soak`): 10,000 clients in two client processes
 * (5,000 each, so that no process nears `ulimit -n`; skipped with a message when the limit
 * cannot be raised to what the server needs) for 60 s, server heartbeat every 5 s, a client
 * ping every 2 s, a broadcast every 100 ms (up to 600, each to every client: on a 2-core
 * machine one broadcast to 10,000 clients takes longer than 100 ms, and the next then goes out
 * as soon as the server is free); the server's heap used must come back within 10 % of the
 * baseline, and its RSS within 50 % (native pages the allocator keeps after 10,000 sockets;
 * measured level over repeated cycles, not growing), within 30 s of the last close (see ws.ts).
 */
import { wsSoak } from './ws.js';

wsSoak({
  form: 'long',
  connections: 10_000,
  seconds: 60,
  heartbeatMs: 5000,
  pingEveryMs: 2000,
  clientsPerProcess: 5000,
  warmupConnections: 200,
  maxGrowth: 0.1,
  maxRssGrowth: 0.5,
  settleMs: 30_000,
});
