import type { RequestListener } from 'node:http';
import {
  cors,
  createRouter,
  type Middleware,
  mount,
  rateLimit,
  requestId,
  requireHttps,
  securityHeaders,
  toNodeListener,
} from 'portico';
import type { ServerConfig } from './config.js';
import { createMessages } from './messages.js';

/** The reference service: its request listener and what it holds. */
export interface ReferenceApp {
  listener: RequestListener;
  messages: ReturnType<typeof createMessages>;
}

/** Builds the service from portico's public API only. */
export function createApp(config: ServerConfig): ReferenceApp {
  const messages = createMessages();
  const chain: Middleware[] = [requestId(), securityHeaders({ trustProxy: config.trustProxy })];
  if (config.production && config.tls === undefined) {
    chain.push(requireHttps({ trustProxy: config.trustProxy }));
  }
  chain.push(
    cors({ origins: config.corsOrigins, credentials: true }),
    mount(
      '/api',
      rateLimit({
        limit: config.rateLimit,
        windowMs: config.rateLimitWindowSeconds * 1000,
        trustProxy: config.trustProxy,
      }),
    ),
    createRouter({ ...messages.routes }),
  );
  return { listener: toNodeListener(chain), messages };
}
