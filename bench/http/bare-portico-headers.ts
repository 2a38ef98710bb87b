/**
 * A reference: plain node:http writing, by hand, the same response headers as the portico
 * server (request id, security headers, CORS, rate-limit counters) in one `writeHead`. The
 * gap between this and bare node:http is the cost of the headers alone; the gap between this
 * and portico is portico's own.
 */
import { serveBare } from '../lib/bare.js';
import { porticoHeaders } from './portico-headers.js';

serveBare('/api/hello', (req, res) => {
  const body = JSON.stringify({ hello: 'world' });
  res.writeHead(200, porticoHeaders(req, body));
  res.end(body);
});
