// The demo credentials of examples/node-http, express, koa and fastify (the same small
// API on four hosts), and how they start. Demo only: never use a published key or secret for real.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';

/** The browser origin allowed: for CORS, and for the WebSocket `Origin` check. */
export const ORIGIN = 'http://localhost:5173';

/** The API key the demo accepts (send it as `X-API-Key`). */
export const DEMO_API_KEY = 'demo-frameworks-key-0123456789abcdef';

/** The HS256 secret bearer tokens are signed with (at least 32 bytes), and their `iss` / `aud`. */
export const DEMO_JWT_SECRET = 'demo-frameworks-secret-0123456789abcdef';
export const ISSUER = 'https://id.example.com';
export const AUDIENCE = 'https://api.example.com';

/**
 * Runs an example when its file is the one started (`node --import tsx examples/<name>/server.ts`):
 * listens on 127.0.0.1 at `PORT` (else `port`) and closes on SIGTERM/SIGINT.
 */
export async function runIfMain(
  moduleUrl: string,
  label: string,
  port: number,
  createApp: () => Promise<{ server: Server; close(): Promise<void> }>,
): Promise<void> {
  if (moduleUrl !== pathToFileURL(process.argv[1] ?? '').href) return;
  const { server, close } = await createApp();
  server.listen(Number(process.env.PORT || port), '127.0.0.1', () => {
    const { port: actual } = server.address() as AddressInfo;
    console.log(
      `${label} example on http://127.0.0.1:${actual}; the demo key is in examples/frameworks/shared.ts`,
    );
  });
  process.once('SIGTERM', () => void close());
  process.once('SIGINT', () => void close());
}
