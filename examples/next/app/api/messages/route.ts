// POST /api/messages {"text": "…"}: published to the event stream; the body is read by
// portico (one read, its limit, 415 for another media type, 422 for a bad message).
import { readJson, requirePrincipal, sendJson, unprocessable } from 'portico';
import { toFetchHandler } from 'portico/fetch';
import { front, hub } from '../../../lib/portico';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

export const POST = toFetchHandler([
  ...front,
  async (req, res) => {
    const text = (await readJson<{ text?: unknown } | null>(req))?.text;
    if (typeof text !== 'string' || text === '') {
      throw unprocessable([{ field: '/text', message: 'must be a non-empty string' }]);
    }
    const message = { from: requirePrincipal(req).sub, text };
    await hub.publish('messages', 'message', message);
    sendJson(res, 201, message);
  },
]);
