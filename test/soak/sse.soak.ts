/**
 * The SSE soak, long form (`npm run test:soak`): 5 rounds of 5,000 streams, heartbeat every
 * second; after each round, streams, hub subscriptions, connections, handles, timers and
 * listener counts back to the baseline (see sse.ts).
 */
import { sseSoak } from './sse.js';

sseSoak({ form: 'long', rounds: 5, connections: 5000, heartbeatMs: 1000 });
