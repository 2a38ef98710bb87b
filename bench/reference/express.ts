/**
 * Express 5 with the stack the reference server runs on `/api/*`: helmet, cors (the same
 * origins, credentials), express-rate-limit (in memory, limit 1e9 per 60 s: counts every
 * request, never triggers) and an API-key check (passport-headerapikey is not installed):
 * the SHA-256 of `X-API-Key` looked up in a `Map` of key hashes, as portico's
 * `MemoryApiKeyStore` does, then `res.json` of the owner. `trust proxy` 1, as the reference
 * server's `TRUST_PROXY=1`.
 */
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import cors from 'cors';
import express, { type RequestHandler } from 'express';
import { rateLimit } from 'express-rate-limit';
import helmet from 'helmet';
import { serve } from '../lib/serve.js';
import { API_KEY_OWNER, CORS_ORIGINS, RATE_LIMIT, VARIABLES, variable } from './shared.js';

const sha256 = (key: string) => createHash('sha256').update(key).digest('base64url');
/** The one key of the run, by its hash (never the key itself), to its owner. */
const owners = new Map([[sha256(variable(VARIABLES.apiKey)), API_KEY_OWNER]]);

type Owner = typeof API_KEY_OWNER;

const apiKey: RequestHandler = (req, res, next) => {
  const key = req.get('x-api-key');
  const owner = key === undefined ? undefined : owners.get(sha256(key));
  if (owner === undefined) {
    res.status(401).set('WWW-Authenticate', 'ApiKey').json({ error: 'unauthorized' });
    return;
  }
  res.locals.owner = owner;
  next();
};

const app = express();
app.set('trust proxy', 1);
// ETag left at Express's default (weak, computed per body): what an Express app gets.
app.use(helmet());
app.use(cors({ origin: CORS_ORIGINS, credentials: true }));
app.use(
  rateLimit({ windowMs: 60_000, limit: RATE_LIMIT, standardHeaders: false, legacyHeaders: true }),
);
app.get('/api/me', apiKey, (_req, res) => {
  const { sub, name, role, scopes } = res.locals.owner as Owner;
  res.json({ sub, name, role, scopes, method: 'api_key' });
});

serve(createServer(app));
