// A service traced with OpenTelemetry through portico's diagnostics channels: an API behind an
// API key and a rate limit, an OAuth token endpoint (client_credentials), and a route that
// sends a webhook. See docs/observability.md.
// node --import tsx examples/opentelemetry/server.ts   (env: PORT; spans and metrics on stdout)
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { context, metrics, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  ConsoleMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  ConsoleSpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import {
  apiKeyAuth,
  authenticate,
  compose,
  createApiKey,
  createAuthorizationServer,
  createKeySet,
  createRouter,
  createSessions,
  createWebhookSender,
  defineClient,
  MemoryApiKeyStore,
  MemoryClientStore,
  rateLimit,
  requestId,
  requirePrincipal,
  sendJson,
  sendNoContent,
  toNodeListener,
} from 'portico';
import { instrumentPortico } from './instrumentation.js';

/** The demo client of the token endpoint. */
export const SERVICE = { clientId: 'demo-service', secret: 'demo-service-secret' };

/** The service: its server, its demo API key, and `close()`. Listen on 127.0.0.1 yourself. */
export async function createService() {
  const apiKeys = new MemoryApiKeyStore();
  const { key } = await createApiKey(apiKeys, { owner: 'alice', name: 'demo' });
  const auth = createAuthorizationServer({
    issuer: 'http://127.0.0.1',
    clients: new MemoryClientStore([
      await defineClient({
        ...SERVICE,
        grantTypes: ['client_credentials'],
        redirectUris: [],
        scopes: ['read:orders'],
      }),
    ]),
    keys: await createKeySet(),
    users: { verify: () => undefined, get: () => undefined },
    sessions: createSessions({ allowedOrigins: ['http://127.0.0.1'] }),
  });
  // Local demo only: the receiver is this server, over http on 127.0.0.1.
  const webhooks = createWebhookSender({ allowHttp: true, allowPrivate: true });
  const api = compose([
    authenticate([apiKeyAuth({ store: apiKeys })]),
    rateLimit({ limit: 5, windowMs: 60_000 }),
  ]);
  const router = createRouter({
    ...auth.routes,
    '/api/me': { GET: compose([api, (req, res) => sendJson(res, 200, requirePrincipal(req))]) },
    '/api/orders': {
      POST: compose([
        api,
        async (_req, res) => {
          await webhooks.send('order.created', { order: 1 });
          sendJson(res, 202, { queued: true });
        },
      ]),
    },
    '/hooks': { POST: (_req, res) => sendNoContent(res) },
  });
  const server: Server = createServer(toNodeListener([requestId(), router]));
  return {
    server,
    apiKey: key,
    /** Subscribes the receiver (this server's `/hooks`), once it listens. */
    async subscribeReceiver() {
      const { port } = server.address() as AddressInfo;
      await webhooks.addEndpoint({ url: `http://127.0.0.1:${port}/hooks` });
    },
    async close() {
      await webhooks.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  // The OpenTelemetry SDK: W3C trace context, spans and metrics printed on stdout.
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(
    new BasicTracerProvider({
      spanProcessors: [new SimpleSpanProcessor(new ConsoleSpanExporter())],
    }),
  );
  metrics.setGlobalMeterProvider(
    new MeterProvider({
      readers: [
        new PeriodicExportingMetricReader({
          exporter: new ConsoleMetricExporter(),
          exportIntervalMillis: 10_000,
        }),
      ],
    }),
  );
  instrumentPortico({ tracer: trace.getTracer('portico'), meter: metrics.getMeter('portico') });

  const service = await createService();
  const port = Number(process.env.PORT || 3006);
  service.server.listen(port, '127.0.0.1', async () => {
    await service.subscribeReceiver();
    console.log(`listening on http://127.0.0.1:${port}`);
    console.log(`export API_KEY=${service.apiKey}`);
  });
}
