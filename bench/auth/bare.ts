/**
 * The floor: plain node:http answering `GET /api/me` with the bearer servers' JSON, checking
 * no credential at all.
 */
import { createServer } from 'node:http';
import { serve } from '../lib/serve.js';
import { SUBJECT } from './shared.js';

const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/api/me') {
    const body = JSON.stringify({ sub: SUBJECT, method: 'bearer' });
    res.writeHead(200, {
      'Content-Type': 'application/json; charset=utf-8',
      'Content-Length': Buffer.byteLength(body),
    });
    res.end(body);
    return;
  }
  res.writeHead(404, { 'Content-Length': 0 });
  res.end();
});

serve(server);
