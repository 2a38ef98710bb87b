// GET /api/events: the messages as Server-Sent Events, a streaming body that ends when the
// client goes away.
import { requirePrincipal, streamChannel } from 'portico';
import { toFetchHandler } from 'portico/fetch';
import { front, hub } from '../../../lib/portico';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

export const GET = toFetchHandler([
  ...front,
  (req, res) => {
    requirePrincipal(req); // a stream of a principal's data asks for one itself
    void streamChannel(req, res, { hub, channel: 'messages' });
  },
]);
