import type { IncomingMessage } from 'node:http';
import {
  authenticate,
  badRequest,
  compose,
  cors,
  createChannelProtocol,
  createCredentialGuard,
  createHub,
  createRouter,
  createUpgradeHandler,
  HttpError,
  type MethodTable,
  type Middleware,
  mount,
  rateLimit,
  requestId,
  requireHttps,
  securityHeaders,
  toNodeListener,
  type UpgradeHandler,
} from 'portico';
import type { Logger } from 'portico/diagnostics';
import { compression, healthChecks, maintenanceMode, shedLoad } from 'portico/http';
import type { ServeContext, ServiceApp } from 'portico/node';
import { createUserInfoEndpoint } from 'portico/oauth';
import { MemoryRateLimitStore } from 'portico/rate-limit';
import { accountRoutes, apiSignOut } from './account.js';
import { createAuth } from './auth.js';
import type { ServerConfig } from './config.js';
import { consoleRoutes } from './console.js';
import { createEvents } from './events.js';
import { grantRoutes } from './grants.js';
import { publishChange } from './history.js';
import { keyRoutes } from './keys.js';
import { accessLog, createLogger } from './logging.js';
import { createMcp } from './mcp.js';
import { createMessages, READ, READ_MESSAGES } from './messages.js';
import { createOAuth } from './oauth.js';
import { apiScopes, createResources } from './resources.js';
import { createSharedState } from './shared-state.js';
import { createUpstream } from './upstream.js';
import { avatarRoutes, createUsers } from './users.js';
import { createWebhooks } from './webhooks.js';

/** The reference service, for `serve()`: its request listener and what it holds. */
export interface ReferenceApp extends ServiceApp {
  messages: ReturnType<typeof createMessages>;
  /** The `/events` streams: `close()` ends them all (graceful shutdown). */
  events: Awaited<ReturnType<typeof createEvents>>;
  /** For the server's `upgrade` event: the `/ws` channel. */
  upgrade: UpgradeHandler;
  /** Graceful shutdown, first: WebSocket clients get 1001, event streams end. */
  beforeDrain(): Promise<void>;
  /**
   * Graceful shutdown, once the requests in flight are answered and what they created is
   * fanned out and queued for webhooks (`track`): the hubs and the stores close.
   */
  close(): Promise<void>;
  /** The demo API key, when this process generated it: printed once at start. */
  generatedDemoKey: string | undefined;
  /** The protected resources (RFC 9728): `BASE_URL` and `/mcp`. */
  resources: ReturnType<typeof createResources>;
}

/** Where the service is reached, and how it counts the work a graceful shutdown waits for. */
export interface ServiceSite {
  /** The public address: the token issuer and audience. */
  baseUrl: string;
  /**
   * Counts work a request started after its answer (`serve()`'s `track`).
   * @defaultValue none: nothing waits for it
   */
  track?: ServeContext['track'];
}

/**
 * An HTTP/1.1 request carries exactly one `Host`, and no request more than one (RFC 9112
 * §3.2): otherwise a 400 problem. (node's own check, turned off in main.ts, would answer a
 * bare 400 without a body, and lets a second Host line through.)
 */
function hasOneHost(req: IncomingMessage): boolean {
  let hosts = 0;
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    if (req.rawHeaders[i]!.length === 4 && req.rawHeaders[i]!.toLowerCase() === 'host') hosts++;
  }
  return hosts === 1 || (hosts === 0 && req.httpVersion === '1.0');
}

const oneHost: Middleware = (req, res, next) => {
  if (!hasOneHost(req)) {
    res.setHeader('Connection', 'close'); // a client this confused gets a fresh start
    throw badRequest('An HTTP/1.1 request must carry exactly one Host header.', {
      code: 'ERR_HOST_HEADER',
    });
  }
  return next();
};

/**
 * 426 with `Upgrade: websocket` (RFC 9110 §15.5.22): `/ws` answers only an opening handshake.
 * `Connection` must name `upgrade` (RFC 9110 §7.8), and keeps `close` when the client asked for it
 * (a `Connection` header set by hand stops node from adding its own).
 */
const upgradeRequired: Middleware = (req) => {
  const connection = req.headers.connection?.toLowerCase() ?? '';
  const close =
    /(?:^|[\s,])close(?:$|[\s,])/.test(connection) ||
    (req.httpVersion === '1.0' && !/(?:^|[\s,])keep-alive(?:$|[\s,])/.test(connection));
  throw new HttpError(426, 'This is a WebSocket endpoint: open it with a WebSocket handshake.', {
    headers: { Upgrade: 'websocket', Connection: close ? 'Upgrade, close' : 'Upgrade' },
  });
};

/**
 * What every answer carries, whatever answers it (the app, a refused WebSocket handshake,
 * a request node's parser refused, the 503 while starting): a request id and the security
 * headers.
 */
export function edgeMiddleware(config: Pick<ServerConfig, 'trustProxy'>): Middleware[] {
  return [requestId(), securityHeaders({ trustProxy: config.trustProxy })];
}

/** Open `/events` streams, and `/ws` connections, per principal at most (the next: 429). */
const MAX_CONNECTIONS_PER_PRINCIPAL = 50;

/** The https origin of the public address (its scheme made https, its host and port kept). */
function httpsOrigin(baseUrl: string): string {
  const url = new URL(baseUrl);
  return `https://${url.host}`;
}

/**
 * Builds the service from portico's public API only, for the public address `site.baseUrl`,
 * logging to `logger` (by default pino at `LOG_LEVEL`, on stdout).
 */
export async function createApp(
  config: ServerConfig,
  site: ServiceSite,
  logger: Logger = createLogger(config.logLevel),
): Promise<ReferenceApp> {
  const { baseUrl, track = (work) => work } = site;
  const users = await createUsers();
  // the service's own pages and the CORS origins: who may use the session cookie and open /ws
  const ownAndCorsOrigins = [...new Set([new URL(baseUrl).origin, ...config.corsOrigins])];
  const shared = createSharedState(
    config.redisCluster !== undefined
      ? { cluster: config.redisCluster }
      : config.redisUrl !== undefined
        ? { url: config.redisUrl }
        : undefined,
    logger,
  );
  const { revocations } = shared;
  // refused credentials (wrong passwords, unknown keys, bad tokens, bad client secrets) count
  // per client IP on every surface that checks one, as one budget: /api, /login, /events, the
  // /ws handshake, the sign-in forms and the OAuth client authentication
  const guard = createCredentialGuard({
    limit: config.rateLimit,
    windowMs: config.rateLimitWindowMs,
    trustProxy: config.trustProxy,
    store: shared.rateLimitStore ?? new MemoryRateLimitStore(),
  });
  const auth = await createAuth({
    revocations,
    apiKeyStore: shared.apiKeyStore,
    sessionStore: shared.sessionStore,
    users,
    allowedOrigins: ownAndCorsOrigins,
    secureCookies: true,
    demoApiKey: config.demoApiKey,
    mtls: config.tls?.ca !== undefined,
  });
  // UPSTREAM_ISSUER: users may also sign in at that OpenID Provider (identity brokering)
  const upstream =
    config.upstream === undefined
      ? undefined
      : await createUpstream({
          config: config.upstream,
          baseUrl,
          sessions: auth.sessions,
          store: shared.oauthStore,
          agreed: shared.agreed,
          replay: shared.signInReplay,
        });
  const oauth = await createOAuth({
    issuer: baseUrl,
    upstream,
    users,
    sessions: auth.sessions,
    signingKeyPath: config.signingKeyPath,
    shared,
    guard,
    logger,
    fapiJwks: config.demoFapiJwks,
    apiSignOut: apiSignOut(auth, upstream),
    registration: { limit: config.registrationLimit, trustProxy: config.trustProxy },
  });
  // bearer tokens first: the authorization server's own, verified with its keys
  const authenticators = [oauth.bearer, ...auth.authenticators];
  // RFC 9728: BASE_URL and /mcp describe themselves; their challenges point there
  const resources = createResources(baseUrl, {
    issuer: baseUrl,
    dpopAlgorithms: oauth.context.dpop?.algorithms,
  });
  const events = await createEvents({
    heartbeat: config.sseHeartbeatMs,
    revocations,
    maxStreamsPerPrincipal: MAX_CONNECTIONS_PER_PRINCIPAL,
    broker: shared.broker('events', 1000),
    logger,
  });
  // WebSocket pushes go to the connections subscribed to the message's own channel
  const channelHub = createHub({ broker: shared.broker('channels', 1000), logger });
  const webhooks = createWebhooks({
    allowPrivate: config.webhookAllowPrivate,
    allowHttp: !config.production,
    schedule: config.webhookRetrySchedule,
    timeout: config.webhookTimeoutMs,
    store: shared.webhookStore,
    revocations,
    logger,
  });
  const messages = createMessages({
    repository: shared.messages,
    // what a graceful shutdown lets finish before it closes the hubs and the stores
    onCreate(message) {
      track(events.publish(message));
      track(webhooks.publish(message));
      track(channelHub.publish(message.channel, 'message.created', message).catch(() => {}));
    },
    // answered once the replay histories no longer hold the old text
    async onUpdate(message, previous) {
      const change = { event: 'message.updated', message } as const;
      await events.change(change);
      await publishChange(channelHub, [message.channel, previous.channel], change);
    },
    async onDelete(message) {
      const change = { event: 'message.deleted', message } as const;
      await events.change(change);
      await publishChange(channelHub, [message.channel], change);
    },
  });
  // who is calling, on /api and /events alike: a bad credential is a 401 at once (counted
  // against the client's guard), none is let through until `identity.required` below
  const identity = authenticate(authenticators, {
    optional: true,
    guard,
    // A Basic challenge makes browsers prompt for a password, even for a page's fetch() or
    // EventSource: offer it to navigations and non-browser clients only. Browsers mark every
    // request with Sec-Fetch-Site, and a script's with a Sec-Fetch-Mode other than navigate.
    challenges(req, all) {
      const { 'sec-fetch-site': site, 'sec-fetch-mode': mode } = req.headers;
      const fromScript = site !== undefined && mode !== 'navigate';
      return fromScript ? all.filter((c) => !c.startsWith('Basic ')) : all;
    },
    resource: resources.api,
    scopes: apiScopes,
  });

  // POST/GET/DELETE /mcp: MCP over Streamable HTTP, for the authorization server's tokens only
  const mcp = createMcp({
    baseUrl,
    authenticator: oauth.mcpBearer,
    resource: resources.mcp,
    guard,
    origins: ownAndCorsOrigins,
    revocations,
    messages,
    logger,
  });

  const limits = {
    limit: config.rateLimit,
    windowMs: config.rateLimitWindowMs,
    trustProxy: config.trustProxy,
    store: shared.rateLimitStore ?? new MemoryRateLimitStore(),
  };
  // behind the TLS proxy, what reached it over plain http is redirected or refused (a
  // WebSocket handshake too, below): credentials and messages never travel in clear
  const httpsOnly = config.production && config.tls === undefined;
  const edge = edgeMiddleware(config);
  // MAINTENANCE: /api/*, /events and /ws answer 503 (discovery, JWKS, health still answer);
  // an event loop late by more than OVERLOAD_MAX_DELAY sheds new requests there with 503
  const maintenance = maintenanceMode({
    enabled: config.maintenance,
    retryAfter: config.maintenanceRetryAfterMs,
  });
  const shed = shedLoad({ maxEventLoopDelay: config.overloadMaxDelayMs });
  const unavailable = [maintenance, shed];
  const health = healthChecks({ checks: shared.checks, maintenance });
  const chain: Middleware[] = [
    ...edge,
    // one JSON line per finished request (stdout), with its id, trace context and caller
    accessLog(logger),
    // bodies of 1 KiB or more in br or gzip, as Accept-Encoding allows (never /events, a 206,
    // or what is encoded already); the OAuth pages' form tokens change with every request
    // parameter, so BREACH has no fixed secret to guess from the sizes
    compression(),
    mount('/api', compose(unavailable)),
    mount('/events', compose(unavailable)),
    // every answer on /api/* tells the rate limit where the client stands, those answered
    // before the call is counted too (a preflight, a bad Host, plain http behind the proxy, a
    // 405, a refused credential); the call itself is counted once its caller is known, below
    mount('/api', rateLimit({ ...limits, report: () => true })),
    oneHost,
  ];
  // plain http behind the proxy: a 308 to https (GET, HEAD), else a 403 (a WebSocket
  // handshake too, in the upgrade handler's middleware below)
  // built from BASE_URL, never from the request's Host (a cache in front could be poisoned)
  const toHttps = httpsOnly
    ? [requireHttps({ trustProxy: config.trustProxy, origin: httpsOrigin(baseUrl) })]
    : [];
  chain.push(...toHttps);
  // every route of the service; /login and /logout read the session cookie themselves,
  // nothing else is open
  const routes: Record<string, Middleware | MethodTable> = {
    ...messages.routes,
    ...events.routes,
    ...keyRoutes(auth.apiKeys),
    ...webhooks.routes,
    ...accountRoutes(users, auth, guard),
    ...grantRoutes(oauth),
    ...oauth.routes,
    '/userinfo': createUserInfoEndpoint(oauth.context, { resource: resources.api }),
    ...consoleRoutes(upstream?.signIn),
    ...upstream?.signIn.routes,
    ...avatarRoutes(),
    ...mcp.routes,
    // /ws is served through the `upgrade` event; a plain request there is told to upgrade
    // (and, from the method table, another method gets 405 with Allow, OPTIONS 204)
    '/ws': { GET: upgradeRequired },
    // liveness and readiness: no credential, no rate limit, answered in maintenance too
    '/healthz': { GET: health.liveness },
    '/readyz': { GET: health.readiness },
  };
  // the route is found once per request (router.match stores it, router.dispatch reuses it):
  // once the credential is checked (a bad one is a 401 whatever the method) and before one is
  // required, a method a known path does not serve is a 405 with Allow, and OPTIONS a 204
  const router = createRouter(routes);
  chain.push(
    // the resources' metadata, readable by any origin: before the credentialed CORS
    createRouter(resources.routes),
    cors({ origins: config.corsOrigins, credentials: true }),
    mount(
      '/api',
      // the call counts by API key, else user, else client IP, once the caller is known
      compose([identity, router.match, rateLimit(limits), identity.required]),
    ),
    // the event stream: the same credentials as /api/* (browsers: the session cookie), and
    // the scope that reading messages needs (a write-only token reads nothing here either)
    mount('/events', compose([identity, router.match, identity.required, READ])),
    router.dispatch,
  );
  const channels = createChannelProtocol({
    hub: channelHub,
    logger,
    heartbeat: config.wsHeartbeatMs,
    // a connection ends (1008) when the credential that opened it is revoked or expires
    revocations,
    // a subscription receives the messages created over REST: reading them needs the scope
    authorize: ({ action, principal }) =>
      action !== 'subscribe' || principal?.scopes.includes(READ_MESSAGES) === true,
  });
  const upgrade = createUpgradeHandler({
    path: '/ws',
    // a refused handshake carries the request id and security headers of any answer; in
    // maintenance or overload it is a 503, never a 101
    middleware: [...edge, ...toHttps, ...unavailable],
    // cross-site WebSocket hijacking: only the CORS origins (and this server's own pages)
    origins: ownAndCorsOrigins,
    authenticators,
    resource: resources.api,
    // a refused credential counts with every other surface's; once spent, 429 and no 101
    guard,
    revocations,
    maxConnectionsPerPrincipal: MAX_CONNECTIONS_PER_PRINCIPAL,
    onConnection: channels.handle,
    logger,
  });
  return {
    listener: toNodeListener(chain, { logger }),
    messages,
    events,
    upgrade,
    // the live connections first: WebSocket clients get 1001, event streams end
    async beforeDrain() {
      events.endStreams();
      mcp.close();
      await channels.close();
    },
    // then (serve() waits for it) the requests in flight get their answers, and what they
    // created is fanned out and queued for webhooks, before the hubs and the stores (Redis) go
    async close() {
      mcp.close();
      await Promise.all([events.close(), webhooks.close()]);
      await channelHub.close();
      shed.close();
      await shared.close();
    },
    generatedDemoKey: auth.generatedDemoKey,
    resources,
  };
}
