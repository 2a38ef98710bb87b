/**
 * A reference: plain node:http setting the same response headers as the portico server
 * (which its floor row writes in one raw `writeHead`), but with one `setHeader` each, as
 * middleware does. The gap between the two is what node's per-header API costs (validation,
 * lower-casing, storing, then serialising); the gap between this and portico is portico's
 * own work.
 */
import { serveBare } from '../lib/bare.js';
import { porticoHeaders } from './portico-headers.js';

serveBare('/api/hello', (req, res) => {
  const body = JSON.stringify({ hello: 'world' });
  const headers = porticoHeaders(req, body);
  for (const name in headers) res.setHeader(name, headers[name]!);
  res.statusCode = 200;
  res.end(body);
});
