/**
 * The mixed REST soak, long form (`npm run test:soak`): the reference server under 60 s of
 * POST, conditional GET and list requests over 10 connections; no 5xx, no connection error,
 * the p99 latency written to test-results/soak/rest-long.json (see rest.ts).
 */
import { restSoak } from './rest.js';

restSoak({ form: 'long', seconds: 60, connections: 10 });
