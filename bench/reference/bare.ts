/**
 * The floor: plain node:http answering `GET /api/me` with the reference server's JSON for the
 * demo API key (`JSON.stringify` per request, as every server), checking no credential at all.
 */
import { serveJsonFloor } from '../lib/bare.js';
import { API_KEY_OWNER } from './shared.js';

serveJsonFloor('/api/me', () => ({ ...API_KEY_OWNER, method: 'api_key' }));
