/**
 * The floor: plain node:http answering `GET /api/me` with the bearer servers' JSON, checking
 * no credential at all.
 */
import { serveJsonFloor } from '../lib/bare.js';
import { SUBJECT } from './shared.js';

serveJsonFloor('/api/me', () => ({ sub: SUBJECT, method: 'bearer' }));
