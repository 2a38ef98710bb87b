/** Express 5 with helmet, cors and express-rate-limit, answering `GET /api/hello`. */
import { createServer } from 'node:http';
import cors from 'cors';
import express from 'express';
import { rateLimit } from 'express-rate-limit';
import helmet from 'helmet';
import { serve } from '../lib/serve.js';

const app = express();
// ETag left at Express's default (weak, computed per body): what an Express app gets.
app.use(helmet());
app.use(cors({ origin: 'http://localhost:5173', credentials: true }));
app.use(rateLimit({ windowMs: 60_000, limit: 1e9, standardHeaders: false, legacyHeaders: true }));
app.get('/api/hello', (_req, res) => {
  res.json({ hello: 'world' });
});

serve(createServer(app));
