/**
 * The SSE soak, short form (in `npm test`): 2 rounds of 300 streams, heartbeat every 500 ms;
 * after each round, streams, hub subscriptions, connections, handles, timers and listener
 * counts back to the baseline (see sse.ts).
 */
import { sseSoak } from './sse.js';

sseSoak({ form: 'short', rounds: 2, connections: 300, heartbeatMs: 500 });
