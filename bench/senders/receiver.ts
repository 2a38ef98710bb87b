/**
 * The receiver of a sender comparison: node:http on 127.0.0.1, port 0, answering `204` to
 * every POST once its body is read, and counting them. Its `/_bench/` routes let the
 * orchestrator reset the count (`POST /_bench/reset`), read it (`GET /_bench/count`) and
 * read the first request received since the reset (`GET /_bench/first`, for the checks).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { serve } from '../lib/serve.js';
import type { CapturedRequest } from './types.js';

let count = 0;
let first: CapturedRequest | undefined;
let capturing = false;

function reply(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

function control(req: IncomingMessage, res: ServerResponse): void {
  if (req.method === 'POST' && req.url === '/_bench/reset') {
    count = 0;
    first = undefined;
    capturing = true;
    reply(res, 200, { count });
  } else if (req.method === 'GET' && req.url === '/_bench/count') {
    reply(res, 200, { count });
  } else if (req.method === 'GET' && req.url === '/_bench/first' && first !== undefined) {
    reply(res, 200, first);
  } else {
    reply(res, 404, { error: 'not found' });
  }
}

function capture(req: IncomingMessage, res: ServerResponse): void {
  capturing = false;
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (chunk: string) => {
    body += chunk;
  });
  req.on('end', () => {
    first = { method: req.method ?? '', headers: req.headers, body };
    count++;
    res.writeHead(204).end();
  });
}

const server = createServer((req, res) => {
  if (req.url?.startsWith('/_bench/')) return control(req, res);
  if (req.method !== 'POST') return reply(res, 405, { error: 'POST only' });
  if (capturing) return capture(req, res);
  req.on('end', () => {
    count++;
    res.writeHead(204).end();
  });
  req.resume();
});
server.keepAliveTimeout = 60_000;

serve(server);
