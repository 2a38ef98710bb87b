import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { serve } from './serve.js';

/**
 * Serves plain node:http, the floors and references of the comparisons: `GET path` is
 * answered by `answer`, anything else by a bare 404.
 */
export function serveBare(
  path: string,
  answer: (req: IncomingMessage, res: ServerResponse) => void,
): void {
  const server = createServer((req, res) => {
    if (req.method === 'GET' && req.url === path) {
      answer(req, res);
      return;
    }
    res.writeHead(404, { 'Content-Length': 0 });
    res.end();
  });
  serve(server);
}

/**
 * A floor: `GET path` answered with `JSON.stringify(value())` (per request, as every server
 * under test does) and no header but Content-Type and Content-Length.
 */
export function serveJsonFloor(path: string, value: () => unknown): void {
  serveBare(path, (_req, res) => {
    const body = JSON.stringify(value());
    res.writeHead(200, {
      'Content-Type': 'application/json; charset=utf-8',
      'Content-Length': Buffer.byteLength(body),
    });
    res.end(body);
  });
}
