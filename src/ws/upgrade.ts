import type { IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import type { Duplex } from 'node:stream';
import type { WebSocket, WebSocketServer } from 'ws';
import type { Authenticator } from '../auth/authenticator.js';
import { createCredentialCheck } from '../auth/credential-check.js';
import type { CredentialGuard } from '../auth/credential-guard.js';
import { authenticationRequired } from '../auth/errors.js';
import type { ProtectedResource } from '../auth/protected-resource.js';
import type { Revocations } from '../auth/revocations.js';
import { revocationsOption } from '../auth/revocations.js';
import { assertScopeTokens } from '../auth/scopes.js';
import type { Middleware } from '../core/compose.js';
import { forbidden, HttpError, notFound } from '../core/errors/errors.js';
import { type Logger, log, loggerOption } from '../core/logger.js';
import type { Principal } from '../core/principal.js';
import {
  isServerFailure,
  PROBLEM_TYPE,
  requestPath,
  toHttpError,
  toProblem,
} from '../core/problem.js';
import {
  formatHeaderLines,
  middlewareOption,
  runOnRawSocket,
  writeRawAnswer,
} from '../core/raw-answer.js';
import { requestFields } from '../core/trace-context.js';
import { buildOriginMatcher, type OriginAllowlist } from '../cors/origin.js';
import {
  published,
  type WebSocketClosedMessage,
  type WebSocketOpenedMessage,
} from '../diagnostics/channels.js';
import { ignoreUpgrade } from '../http/ignore-upgrade.js';
import { getPathname } from '../http/routing/request-path.js';
import { asksForWebSocket } from '../internal/headers.js';
import { loadedWs, loadWs } from '../internal/lazy.js';
import {
  assertKnownOptions,
  booleanOption,
  countOption,
  invalidOption,
} from '../internal/options.js';
import { connectionCap } from '../realtime/connection-options.js';
import { PrincipalConnections } from '../realtime/principal-connections.js';
import { closeWithCredential } from './credential-binding.js';
import { selectSubprotocol, validateUpgradeRequest } from './handshake.js';

/** What {@link UpgradeHandlerOptions.onConnection} learns about a new connection. */
export interface UpgradeContext {
  /** The upgrade request. */
  req: IncomingMessage;
  /** Who connected, when `authenticators` were given and one accepted the request. */
  principal: Principal | undefined;
  /** The negotiated subprotocol, if any. */
  protocol: string | undefined;
}

/** Options of {@link createUpgradeHandler}. */
export interface UpgradeHandlerOptions {
  /**
   * The only path (query ignored, compared in the normal form of `getPathname`: `/%77s` is
   * `/ws`) that accepts upgrades; any other is refused with 404, and a path readers could take
   * differently (`/x/../ws`, `/ws%2F`) with 400.
   */
  path: string;
  /**
   * Origins allowed to connect; a present `Origin` outside it is refused with 403.
   * @defaultValue none: every origin may connect
   * @see {@link https://www.rfc-editor.org/rfc/rfc6455#section-10.2 | RFC 6455 §10.2}
   */
  origins?: OriginAllowlist;
  /**
   * Tried in order, like `authenticate()`; no credential → 401 listing their challenges.
   * @defaultValue `[]`: no authentication, `principal` is `undefined`
   */
  authenticators?: readonly Authenticator[];
  /**
   * The guard that counts refused credentials per client IP (share it with `authenticate()`
   * and the sign-in forms: one budget): checked before the authenticators run, told of every
   * refused credential; once the client has spent it, the handshake is refused with a 429
   * problem (`Retry-After`), a right credential too, and no 101 is sent.
   * @defaultValue none
   */
  guard?: CredentialGuard;
  /**
   * The protected resource this channel is (see `protectedResource()`): the `Bearer` and
   * `DPoP` challenges of a refused handshake carry `resource_metadata` (RFC 9728 §5.1), and
   * a 401's first challenge is `Bearer` whenever an authenticator offers it.
   * @defaultValue none
   */
  resource?: ProtectedResource;
  /**
   * The scopes a handshake needs, named by the `scope` of its 401's challenges (RFC 6750 §3);
   * it only names them (check them in `onConnection` or the channel's `authorize`).
   * @defaultValue none
   */
  scopes?: readonly string[];
  /**
   * The most connections one principal (`principal.sub`) may hold open through this handler
   * at once; the handshake of one more is refused with a 429 problem (`Retry-After`).
   * @defaultValue none: no cap
   */
  maxConnectionsPerPrincipal?: number;
  /**
   * Where the end of a connection's credential is heard: a connection accepted with a
   * principal is closed with 1008 (`credential revoked` / `credential expired`) when one of
   * its `credentialIds` is revoked or its `expiresAt` passes. Give the service's
   * cross-process bus.
   * @defaultValue `processRevocations()`, this process
   */
  revocations?: Revocations;
  /**
   * Subprotocols the server speaks; the client's first supported offer is chosen.
   * @defaultValue `[]`: no subprotocol is selected
   * @see {@link https://www.rfc-editor.org/rfc/rfc6455#section-1.9 | RFC 6455 §1.9}
   */
  protocols?: readonly string[];
  /** The largest message accepted, in bytes; bigger ones close the connection with 1009. @defaultValue `65_536` (64 KiB) */
  maxPayload?: number;
  /** Enable permessage-deflate. @defaultValue `false` */
  perMessageDeflate?: boolean;
  /**
   * Middleware run on the upgrade request before any check, against a response that is
   * never sent: the headers it sets (`requestId()`, `securityHeaders()`, `rateLimit()`'s
   * fields) go on the refusal or on the 101, and a throw refuses the upgrade with its
   * problem (a 429 from `rateLimit()`). Each must call `next()`: an answer of its own would
   * never be sent, and is reported as an error (500).
   * @defaultValue none
   * @example
   * ```ts
   * createUpgradeHandler({ path: '/ws', middleware: [requestId(), securityHeaders()], onConnection });
   * ```
   */
  middleware?: Middleware | readonly Middleware[];
  /** Called with every accepted connection. A throw closes it with 1011. */
  onConnection: (ws: WebSocket, context: UpgradeContext) => void;
  /**
   * Where unexpected errors are logged (a failing authenticator, a throwing `onConnection`):
   * `error`, with the path (no query) and the request's ids. A pino logger is passed as it is.
   * @defaultValue portico's default logger (errors on stderr)
   */
  logger?: Logger;
}

/** The handler for a server's `'upgrade'` event. */
export type UpgradeHandler = (req: IncomingMessage, socket: Duplex, head: Buffer) => void;

const OWNER = 'createUpgradeHandler()';

/** `scopes` (checked) as the credential check takes them: the same for every handshake. */
function scopesOption(scopes: unknown): (() => readonly string[]) | undefined {
  if (scopes === undefined) return undefined;
  if (!Array.isArray(scopes)) throw invalidOption(`${OWNER}: \`scopes\` must be a list of scopes`);
  assertScopeTokens(OWNER, scopes);
  const list = Object.freeze(scopes.slice());
  return () => list;
}
const KNOWN_OPTIONS = [
  'path',
  'origins',
  'authenticators',
  'guard',
  'resource',
  'scopes',
  'maxConnectionsPerPrincipal',
  'revocations',
  'protocols',
  'maxPayload',
  'perMessageDeflate',
  'middleware',
  'onConnection',
  'logger',
] as const satisfies readonly (keyof UpgradeHandlerOptions)[];

function noop(): void {}

/** Headers of a 101 that only the handshake sets. */
const HANDSHAKE_HEADERS =
  /^(?:upgrade|connection|sec-websocket-|content-length$|transfer-encoding$)/i;

/**
 * Writes a complete HTTP refusal (Problem Details body, `Connection: close`) on the raw
 * socket of an upgrade request, then destroys the socket. `headers` (what a response would
 * have carried: `X-Request-ID`, the security headers) go on it too; the error's own win.
 *
 * @example
 * ```ts
 * server.on('upgrade', (req, socket, head) => {
 *   if (maintenance) return refuseUpgrade(req, socket, serviceUnavailable(60));
 *   handler(req, socket, head);
 * });
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc6455#section-4.2.1 | RFC 6455 §4.2.1}
 */
export function refuseUpgrade(
  req: IncomingMessage,
  socket: Duplex,
  error: unknown,
  headers: OutgoingHttpHeaders = {},
): void {
  if (socket.destroyed) return;
  const httpError = toHttpError(error);
  const problemError =
    httpError.status >= 500 && !(error instanceof HttpError)
      ? new HttpError(httpError.status, 'An unexpected error occurred.')
      : httpError;
  const body = JSON.stringify(toProblem(problemError, req));
  writeRawAnswer(
    socket,
    httpError.status,
    [headers, httpError.headers, { 'Cache-Control': 'no-store' }],
    PROBLEM_TYPE,
    body,
  );
}

/**
 * Creates the handler of a server's `'upgrade'` event: checks path, handshake, `Origin` and
 * credentials before the 101 (refusing with a real HTTP Problem Details answer), negotiates a
 * subprotocol, and hands the `ws` connection to `onConnection` with the principal (also set on
 * the request: `getPrincipal(req)`). A refused credential counts against `guard`; a connection
 * ends (1008) when its credential is revoked or expires; `maxConnectionsPerPrincipal` caps
 * the connections of one principal. A request
 * that asks to upgrade to another protocol (`Upgrade: h2c`, as `curl --http2` sends) is
 * served by the server's request listener as a plain request (see {@link ignoreUpgrade}).
 *
 * @example
 * ```ts
 * const handler = createUpgradeHandler({
 *   path: '/ws',
 *   origins: ['https://app.example.com'],
 *   authenticators: [bearer],
 *   guard: createCredentialGuard(),
 *   maxConnectionsPerPrincipal: 20,
 *   onConnection: (ws, { principal }) => channels.handle(ws, { principal }),
 * });
 * server.on('upgrade', handler);
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc6455#section-4.2 | RFC 6455 §4.2}
 */
export function createUpgradeHandler(options: UpgradeHandlerOptions): UpgradeHandler {
  assertKnownOptions(OWNER, options, KNOWN_OPTIONS);
  if (typeof options?.path !== 'string' || !options.path.startsWith('/')) {
    throw invalidOption(`${OWNER}: \`path\` must be a string starting with '/'`);
  }
  if (typeof options.onConnection !== 'function') {
    throw invalidOption(`${OWNER}: \`onConnection\` must be a function`);
  }
  const maxPayload = countOption(OWNER, 'maxPayload', options.maxPayload, 64 * 1024);
  const authenticators = options.authenticators ?? [];
  const credentials = createCredentialCheck(OWNER, authenticators, {
    guard: options.guard,
    surface: 'ws',
    resource: options.resource,
    scopes: scopesOption(options.scopes),
  });
  const missing = () => authenticationRequired(credentials.challenges);
  const matchOrigin =
    options.origins === undefined ? undefined : buildOriginMatcher(OWNER, options.origins);
  const cap = connectionCap(OWNER, options.maxConnectionsPerPrincipal);
  const open = new PrincipalConnections();
  const revocations = revocationsOption(OWNER, options.revocations);
  const supported = new Set(options.protocols ?? []);
  const { path, onConnection } = options;
  const logger = loggerOption(OWNER, options.logger);
  const middleware = middlewareOption(OWNER, options.middleware);
  /** What `middleware` set, by request, until the 101 is written. */
  const pending = new WeakMap<IncomingMessage, OutgoingHttpHeaders>();
  const serverOptions = {
    noServer: true,
    maxPayload,
    perMessageDeflate: booleanOption(OWNER, 'perMessageDeflate', options.perMessageDeflate, false),
    clientTracking: false,
    handleProtocols: (offered: Set<string>) => selectSubprotocol([...offered], supported) ?? false,
  };
  /** The ws server, made on the first handshake (`ws` is loaded then, not at import). */
  let wss: WebSocketServer | undefined;
  const makeServer = ({ WebSocketServer }: typeof import('ws')): WebSocketServer => {
    wss = new WebSocketServer(serverOptions);
    wss.on('headers', (lines: string[], req: IncomingMessage) => {
      const set = pending.get(req);
      if (set === undefined) return;
      pending.delete(req);
      lines.push(...formatHeaderLines([set], (name) => HANDSHAKE_HEADERS.test(name)));
    });
    return wss;
  };
  const server = (): WebSocketServer | Promise<WebSocketServer> => {
    if (wss !== undefined) return wss;
    const ws = loadedWs();
    return ws === undefined ? loadWs().then((loaded) => wss ?? makeServer(loaded)) : makeServer(ws);
  };

  async function check(req: IncomingMessage): Promise<Principal | undefined> {
    // the normal form, as mount() and the router read it (a path readers could take apart
    // differently, `/x/../ws`, is a 400)
    if (getPathname(req) !== path) throw notFound('No WebSocket endpoint at this path.');
    const valid = validateUpgradeRequest(req);
    if (!valid.ok) throw new HttpError(valid.status, valid.reason, { headers: valid.headers });
    const origin = req.headers.origin;
    if (matchOrigin !== undefined && origin !== undefined && !(await matchOrigin(origin))) {
      throw forbidden('This origin may not open a WebSocket here.', { code: 'ERR_WS_ORIGIN' });
    }
    if (authenticators.length === 0) return undefined;
    // the sequence authenticate() runs; only the answer differs (written on the raw socket)
    const verdict = await credentials.check(req, missing);
    if (verdict.refusal !== undefined) throw verdict.refusal;
    return verdict.principal;
  }

  function accept(
    wss: WebSocketServer,
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    principal?: Principal,
  ) {
    if (socket.destroyed) return;
    // the slot is held until the socket closes, whatever becomes of the handshake
    if (principal !== undefined) socket.once('close', open.claim(principal.sub, cap));
    wss.handleUpgrade(req, socket, head, (ws) => {
      const protocol = ws.protocol === '' ? undefined : ws.protocol;
      observeConnection(ws, req, principal);
      try {
        onConnection(ws, { req, principal, protocol });
        closeWithCredential(ws, principal, revocations);
      } catch (error) {
        reportError(error, req);
        try {
          ws.close(1011, 'Internal error');
        } catch {
          ws.terminate();
        }
      }
    });
  }

  function reportError(error: unknown, req: IncomingMessage): void {
    log(
      logger,
      'error',
      {
        component: 'ws',
        event: 'upgrade.failed',
        path: requestPath(req),
        ...requestFields(req),
        err: error,
      },
      'a WebSocket upgrade failed unexpectedly',
    );
  }

  /** `wsOpened` now and `wsClosed` when it closes, for subscribers of either. */
  function observeConnection(ws: WebSocket, req: IncomingMessage, principal?: Principal): void {
    if (!published.wsOpened.hasSubscribers && !published.wsClosed.hasSubscribers) return;
    const sub = principal?.sub;
    const opened = performance.now();
    if (published.wsOpened.hasSubscribers) {
      published.wsOpened.publish({
        req,
        sub,
        protocol: ws.protocol,
      } satisfies WebSocketOpenedMessage);
    }
    ws.once('close', (code: number, reason: Buffer) => {
      if (!published.wsClosed.hasSubscribers) return;
      published.wsClosed.publish({
        req,
        sub,
        code,
        reason: reason.toString(),
        durationMs: Math.round(performance.now() - opened),
      } satisfies WebSocketClosedMessage);
    });
  }

  return function handleUpgrade(req, socket, head) {
    // another protocol (h2c: `curl --http2`) is not ours: served as the plain request it is
    if (!asksForWebSocket(req) && ignoreUpgrade(req, socket, head)) {
      return;
    }
    socket.on('error', noop);
    let headers: OutgoingHttpHeaders = {};
    const checked =
      middleware === undefined
        ? check(req)
        : runOnRawSocket(middleware, req).then((ran) => {
            headers = ran.headers;
            if ('error' in ran) throw ran.error;
            return check(req);
          });
    Promise.all([checked, server()]).then(
      ([principal, wss]) => {
        try {
          if (middleware !== undefined) pending.set(req, headers);
          accept(wss, req, socket, head, principal);
        } catch (error) {
          if (isServerFailure(error)) reportError(error, req);
          refuseUpgrade(req, socket, error, headers);
        }
      },
      (error: unknown) => {
        if (isServerFailure(error)) reportError(error, req);
        refuseUpgrade(req, socket, error, headers);
      },
    );
  };
}
