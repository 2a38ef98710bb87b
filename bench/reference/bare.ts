/**
 * The floor: plain node:http answering `GET /api/me` with the reference server's JSON for the
 * demo API key (`JSON.stringify` per request, as every server), checking no credential at all.
 */
import { createServer } from 'node:http';
import { serve } from '../lib/serve.js';
import { API_KEY_OWNER } from './shared.js';

const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/api/me') {
    const body = JSON.stringify({ ...API_KEY_OWNER, method: 'api_key' });
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
