/** The baseline: plain node:http answering `GET /api/hello`. */
import { serveJsonFloor } from '../lib/bare.js';

serveJsonFloor('/api/hello', () => ({ hello: 'world' }));
