/** The baseline: plain node:http answering `GET /api/hello`. */
import { createServer } from 'node:http';
import { serve } from '../lib/serve.js';

const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/api/hello') {
    const body = JSON.stringify({ hello: 'world' });
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
