// GET /api/me: who the API key belongs to; 401 (a problem, with its challenge) without one.
import { principalOf, toFetchHandler } from 'portico/fetch';
import { front } from '../../../lib/portico';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

export const GET = toFetchHandler(front, {
  handler: (request) => Response.json({ sub: principalOf(request)?.sub }),
});
