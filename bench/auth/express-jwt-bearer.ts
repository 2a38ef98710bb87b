/**
 * Express 5 + `express-oauth2-jwt-bearer` verifying the same RS256 token. The library takes
 * its keys from a JWKS URL (or a provider's discovery document), so this process also runs
 * a tiny key-set provider on another 127.0.0.1 port; the library fetches it on the first
 * token (before measuring: the orchestrator's check sends one) and keeps it 10 minutes
 * (`cacheMaxAge`, longer than a run).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type ErrorRequestHandler } from 'express';
import { auth } from 'express-oauth2-jwt-bearer';
import { serve } from '../lib/serve.js';
import { AUDIENCE, ISSUER, VARIABLES, variable } from './shared.js';

const JWKS_PATH = '/.well-known/jwks.json';

/** Serves the public key set at `JWKS_PATH`; resolves with its URL once listening. */
function serveKeySet(jwks: string): Promise<string> {
  const provider: Server = createServer((req, res) => {
    if (req.method === 'GET' && req.url === JWKS_PATH) {
      res.writeHead(200, {
        'Content-Type': 'application/json',
        'Content-Length': Buffer.byteLength(jwks),
      });
      res.end(jwks);
      return;
    }
    res.writeHead(404, { 'Content-Length': 0 });
    res.end();
  });
  return new Promise((resolve) => {
    provider.listen(0, '127.0.0.1', () => {
      const { port } = provider.address() as AddressInfo;
      provider.unref();
      resolve(`http://127.0.0.1:${port}${JWKS_PATH}`);
    });
  });
}

const jwksUri = await serveKeySet(variable(VARIABLES.jwks));

const app = express();
app.use(auth({ issuer: ISSUER, jwksUri, audience: AUDIENCE, tokenSigningAlg: 'RS256' }));
app.get('/api/me', (req, res) => {
  res.json({ sub: req.auth?.payload.sub, method: 'bearer' });
});
// The library's errors carry status and WWW-Authenticate; answer them without Express's
// default handler logging a stack per refused request (only the pre-measurement check sends any).
const onError: ErrorRequestHandler = (err: unknown, _req, res, _next) => {
  const { status, headers } = err as { status?: number; headers?: Record<string, string> };
  res
    .status(status ?? 500)
    .set(headers ?? {})
    .end();
};
app.use(onError);

serve(createServer(app));
