/**
 * The mixed REST soak, short form (in `npm test`): the reference server under 5 s of POST,
 * conditional GET and list requests over 10 connections; no 5xx, no connection error, the
 * p99 latency written to test-results/soak/rest-short.json (see rest.ts).
 */
import { restSoak } from './rest.js';

restSoak({ form: 'short', seconds: 5, connections: 10 });
