/**
 * The `compression` package (1.8, Express's) on plain node:http, its defaults (br quality 4,
 * gzip level 6, threshold 1 KB): the handler sends the JSON with its Content-Length.
 */
import { createServer } from 'node:http';
import compression from 'compression';
import { serve } from '../lib/serve.js';
import { PATH, payload } from './body.js';

const compress = compression();

const server = createServer((req, res) => {
  compress(req as never, res as never, () => {
    if (req.method !== 'GET' || req.url !== PATH) {
      res.writeHead(404, { 'Content-Length': 0 });
      res.end();
      return;
    }
    const body = JSON.stringify(payload());
    res.writeHead(200, {
      'Content-Type': 'application/json; charset=utf-8',
      'Content-Length': Buffer.byteLength(body),
    });
    res.end(body);
  });
});

serve(server);
