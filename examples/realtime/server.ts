// Chat rooms over one channel hub: messages posted over REST reach WebSocket and SSE
// subscribers alike, and reconnecting clients catch up. See docs/realtime.md.
// node --import tsx examples/realtime/server.ts   (env: PORT, API_KEY; listens on 127.0.0.1)
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { pathToFileURL } from 'node:url';
import {
  apiKeyAuth,
  authenticate,
  type ChannelAuthorizer,
  compose,
  cors,
  createChannelProtocol,
  createCredentialGuard,
  createHub,
  createRouter,
  createUpgradeHandler,
  getParams,
  MemoryApiKeyStore,
  notFound,
  readJson,
  requestId,
  requirePrincipal,
  securityHeaders,
  sendJson,
  streamChannel,
  toNodeListener,
  unprocessable,
} from 'portico';
import { importApiKey } from 'portico/auth';
import { formatPosition, MemoryBroker } from 'portico/realtime';

/** The one browser origin allowed: for CORS, and for the WebSocket `Origin` check. */
export const ORIGINS = ['http://localhost:5173'];

/** The key of the local try-out (never use a published key for real). */
export const DEMO_API_KEY = 'demo-realtime-key-0123456789abcdef';

/** The hub channel of the `:room` in the path; a room name outside `[A-Za-z0-9_-]{1,64}` is a 404. */
function roomOf(req: IncomingMessage): string {
  const { room = '' } = getParams(req);
  if (!/^[\w-]{1,64}$/.test(room)) throw notFound('No such room.');
  return `room:${room}`;
}

/** Builds the server; `apiKeys` maps each key to the user it belongs to. */
export async function createRealtimeApp(apiKeys: Record<string, string>) {
  const store = new MemoryApiKeyStore();
  for (const [key, owner] of Object.entries(apiKeys)) await importApiKey(store, key, { owner });
  const authenticators = [apiKeyAuth({ store })];

  // One hub for both transports; each room keeps its last 500 events for reconnections.
  const hub = createHub({ broker: new MemoryBroker({ historySize: 500 }) });

  // Rooms are open to everyone; `user:<sub>` only to its user.
  const authorize: ChannelAuthorizer = ({ channel, principal }) =>
    channel.startsWith('room:') || channel === `user:${principal?.sub}`;

  // Refused credentials, on the routes and at the /ws handshake, count per client IP. Streams
  // and sockets end by themselves when the key that opened them is deleted.
  const guard = createCredentialGuard();

  const postMessage = async (req: IncomingMessage, res: ServerResponse) => {
    const text = (await readJson<{ text?: unknown } | null>(req))?.text;
    if (typeof text !== 'string' || text.length === 0 || text.length > 1000) {
      throw unprocessable([{ field: '/text', message: 'must be a string of 1–1000 characters' }]);
    }
    const from = requirePrincipal(req).sub;
    const channel = roomOf(req);
    const sent = await hub.publish(channel, 'message', { from, text });
    sendJson(res, 201, { channel, position: formatPosition(sent), from, text });
  };

  const app = compose([
    requestId(),
    securityHeaders(),
    cors({ origins: ORIGINS, credentials: true }),
    authenticate(authenticators, { guard }),
    createRouter({
      '/rooms/:room/messages': { POST: postMessage },
      // SSE: `Last-Event-ID` replays what the client missed, or sends a `reset` event.
      '/rooms/:room/events': {
        GET: (req, res) => {
          streamChannel(req, res, { hub, channel: roomOf(req) });
        },
      },
    }),
  ]);

  // WebSocket: authenticated and origin-checked before the 101, then the channel protocol.
  const channels = createChannelProtocol({ hub, authorize });
  const server = createServer(toNodeListener(app));
  server.on(
    'upgrade',
    createUpgradeHandler({
      path: '/ws',
      origins: ORIGINS,
      authenticators,
      guard, // refused credentials count here too: one budget per client IP
      onConnection: channels.handle,
    }),
  );

  async function close(): Promise<void> {
    await channels.close(); // 1001 to every client, then terminate the stragglers
    await hub.close();
    server.closeAllConnections(); // event streams end with their sockets
    await new Promise((resolve) => server.close(resolve));
  }
  return { server, hub, close };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  // A fixed demo key for a local try-out; set API_KEY to your own anywhere else.
  const apiKey = process.env.API_KEY || DEMO_API_KEY;
  const { server, close } = await createRealtimeApp({ [apiKey]: 'alice' });
  const port = Number(process.env.PORT || 3004);
  server.listen(port, '127.0.0.1', () => {
    console.log(`realtime example on http://127.0.0.1:${port} (send the key in X-API-Key)`);
  });
  process.once('SIGTERM', () => void close());
  process.once('SIGINT', () => void close());
}
