import { channel, type TracingChannel, tracingChannel } from 'node:diagnostics_channel';
import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * The `node:diagnostics_channel` names portico publishes on, for tracers, metrics and audit
 * logs: subscribe with `diagnostics_channel.subscribe(channels.authRefused, onMessage)`.
 * Publishing costs nothing while a channel has no subscriber. No message holds a credential:
 * no header value, token, key, password or secret (a message may hold the request itself,
 * whose headers do, and whose `url` may hold a query with an `api_key` or, in absolute form
 * (`GET http://user:password@host/path`), a password: read from it only what you need, and
 * write its target as `requestPath(req)`, the path alone).
 *
 * `request` is a `TracingChannel` (its `start`, `end`, `asyncStart`, `asyncEnd` and `error`
 * channels are `tracing:portico:request:start` and so on): every request that
 * `toNodeListener` or an adapter runs, with a {@link RequestMessage}.
 *
 * @example
 * ```ts
 * import { subscribe } from 'node:diagnostics_channel';
 * import { channels, type AuthRefusedMessage } from 'portico/diagnostics';
 *
 * subscribe(channels.authRefused, (message) => {
 *   const { mechanism, code } = message as AuthRefusedMessage;
 *   console.log(`refused: ${mechanism ?? 'none'} ${code}`);
 * });
 * ```
 */
export const channels = Object.freeze({
  /** TracingChannel: each request run by `toNodeListener` or an adapter. {@link RequestMessage} */
  request: 'portico:request',
  /** A request's credential was accepted. {@link AuthSucceededMessage} */
  authSucceeded: 'portico:auth:succeeded',
  /** A credential was refused, or one was required and none came. {@link AuthRefusedMessage} */
  authRefused: 'portico:auth:refused',
  /** A request went past a rate limit (answered 429). {@link RateLimitedMessage} */
  rateLimited: 'portico:rate-limit:exceeded',
  /** The token endpoint issued tokens. {@link TokenIssuedMessage} */
  tokenIssued: 'portico:oauth:token-issued',
  /** The token endpoint refused a request (an OAuth error). {@link TokenRefusedMessage} */
  tokenRefused: 'portico:oauth:token-refused',
  /** A WebSocket connection opened. {@link WebSocketOpenedMessage} */
  wsOpened: 'portico:ws:opened',
  /** A WebSocket connection closed. {@link WebSocketClosedMessage} */
  wsClosed: 'portico:ws:closed',
  /** A Server-Sent Events stream opened. {@link SseOpenedMessage} */
  sseOpened: 'portico:sse:opened',
  /** A Server-Sent Events stream ended. {@link SseEndedMessage} */
  sseEnded: 'portico:sse:ended',
  /** A webhook delivery attempt finished, delivered or not. {@link WebhookAttemptMessage} */
  webhookAttempt: 'portico:webhook:attempt',
  /** A webhook delivery ran out of attempts. {@link WebhookDeadLetteredMessage} */
  webhookDeadLettered: 'portico:webhook:dead-lettered',
  /** Credentials were revoked (here, or in another process through the broker). {@link RevocationMessage} */
  revocation: 'portico:revocation',
} as const);

/** The context of the `request` TracingChannel: the request and its response. */
export interface RequestMessage {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  /** Set on `error`: what the chain threw (it is answered as a problem). */
  error?: unknown;
}

/** `authSucceeded`: who the credential names. */
export interface AuthSucceededMessage {
  /** The request (for an upgrade, the handshake). */
  readonly req: IncomingMessage;
  /** The principal's `method`: `api_key`, `bearer`, `basic`, `session`, `certificate`, … */
  readonly mechanism: string;
  /** The principal's subject. */
  readonly sub: string;
  /** Where: `http` (`authenticate()`, event streams included), `ws` (a WebSocket upgrade). */
  readonly surface: 'http' | 'ws';
}

/** `authRefused`: why, never what was presented. */
export interface AuthRefusedMessage {
  readonly req: IncomingMessage;
  /** The status answered: 400, 401, 429 (the credential guard), 503 (its store down). */
  readonly status: number;
  /** The problem's code (as `ERR_INVALID_CREDENTIALS`), or the OAuth error, when it has one. */
  readonly code: string | undefined;
  /** The scheme refused, when one was presented and recognised (`Bearer`, `ApiKey`, `Basic`). */
  readonly mechanism: string | undefined;
  /** Where: `http` (`authenticate()`, event streams included), `ws` (a WebSocket upgrade). */
  readonly surface: 'http' | 'ws';
}

/** `rateLimited`: a refusal with 429. */
export interface RateLimitedMessage {
  readonly req: IncomingMessage;
  /** What was counted: `ip:<address>`, `key:<API key id>`, `user:<sub>`, or the `key` option's. */
  readonly key: string;
  readonly limit: number;
  /** When the window resets (ms since the epoch). */
  readonly resetAt: number;
}

/** `tokenIssued`. */
export interface TokenIssuedMessage {
  readonly req: IncomingMessage;
  /** `authorization_code`, `client_credentials`, `refresh_token`, `urn:…:device_code`. */
  readonly grantType: string;
  readonly clientId: string;
  /** The granted scope, space-separated. */
  readonly scope: string;
  /** Whether a refresh token came with the access token. */
  readonly refreshToken: boolean;
}

/** `tokenRefused`. */
export interface TokenRefusedMessage {
  readonly req: IncomingMessage;
  /** As the request said, when it said one. */
  readonly grantType: string | undefined;
  /** The authenticated client, when the refusal came after its authentication. */
  readonly clientId: string | undefined;
  /** The OAuth error code (`invalid_grant`, `invalid_client`, …). */
  readonly error: string;
  readonly status: number;
}

/** `wsOpened`. */
export interface WebSocketOpenedMessage {
  readonly req: IncomingMessage;
  /** The principal's subject, when the handshake carried a credential. */
  readonly sub: string | undefined;
  /** The negotiated subprotocol, or `''`. */
  readonly protocol: string;
}

/** `wsClosed`. */
export interface WebSocketClosedMessage {
  readonly req: IncomingMessage;
  readonly sub: string | undefined;
  /** The close code received or sent (1000, 1001, 1008, …; 1006 when the socket just went). */
  readonly code: number;
  readonly reason: string;
  /** How long the connection lived, in ms. */
  readonly durationMs: number;
}

/** `sseOpened`. */
export interface SseOpenedMessage {
  readonly req: IncomingMessage;
}

/** `sseEnded`. */
export interface SseEndedMessage {
  readonly req: IncomingMessage;
  /**
   * The stream's `closeReason`: `client` (it went away), `server` (closed by the application),
   * `credential-revoked`, `credential-expired`, `slow-consumer`, `error`.
   */
  readonly reason: string;
  readonly durationMs: number;
}

/** `webhookAttempt`. */
export interface WebhookAttemptMessage {
  readonly endpointId: string;
  readonly deliveryId: string;
  readonly eventType: string;
  /** 1 for the first attempt. */
  readonly attempt: number;
  /** Delivered (a 2xx answer). */
  readonly ok: boolean;
  /** The receiver's status, or `undefined` when none came (a timeout, a refused connection). */
  readonly status: number | undefined;
  /** Why it failed, without the URL's query or any secret (`timeout`, `ECONNREFUSED`, `status 500`). */
  readonly error: string | undefined;
  readonly durationMs: number;
}

/** `webhookDeadLettered`. */
export interface WebhookDeadLetteredMessage {
  readonly endpointId: string;
  readonly deliveryId: string;
  readonly eventType: string;
  readonly attempts: number;
}

/** `revocation`: ids as portico writes them (`jti:…`, `key:…`, `session:…`, `grant:…`), never a secret. */
export interface RevocationMessage {
  readonly ids: readonly string[];
  /**
   * `local`: revoked through this process's bus; `transport`: heard on the bus's shared
   * transport (from another process, or this one's own announcement coming back).
   */
  readonly origin: 'local' | 'transport';
}

/** @internal the publishing side, one object per channel */
export const published = {
  authSucceeded: channel(channels.authSucceeded),
  authRefused: channel(channels.authRefused),
  rateLimited: channel(channels.rateLimited),
  tokenIssued: channel(channels.tokenIssued),
  tokenRefused: channel(channels.tokenRefused),
  wsOpened: channel(channels.wsOpened),
  wsClosed: channel(channels.wsClosed),
  sseOpened: channel(channels.sseOpened),
  sseEnded: channel(channels.sseEnded),
  webhookAttempt: channel(channels.webhookAttempt),
  webhookDeadLettered: channel(channels.webhookDeadLettered),
  revocation: channel(channels.revocation),
};

/** @internal the `request` tracing channel */
export const requestTracing: TracingChannel<RequestMessage, RequestMessage> = tracingChannel<
  RequestMessage,
  RequestMessage
>(channels.request);
