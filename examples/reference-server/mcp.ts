// The MCP endpoint of the reference service (contract "The MCP endpoint"): portico is the door,
// @modelcontextprotocol/sdk speaks MCP behind it. Every request to /mcp is checked here first
// (Origin, the bearer token, the session's owner, the scopes of the tools it calls), then
// handed to the session's Streamable HTTP transport.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import {
  type Authenticator,
  authenticate,
  type CredentialGuard,
  compose,
  forbidden,
  HttpError,
  type MethodTable,
  type Middleware,
  type Principal,
  type Revocations,
  readJson,
  requirePrincipal,
  requireScopes,
  sendJson,
  serviceUnavailable,
  tooManyRequests,
} from 'portico';
import { bindToCredential, type ProtectedResource } from 'portico/auth';
import type { Logger } from 'portico/diagnostics';
import { z } from 'zod';
import type { createMessages } from './messages.js';

/** The scope each tool needs (`whoami` needs none: any token of this resource may ask). */
export const TOOL_SCOPES: Readonly<Record<string, string>> = {
  list_messages: 'read:messages',
  post_message: 'write:messages',
};

/** How many messages `list_messages` returns, at most (the newest). */
const LIST_LIMIT = 50;
/** The largest JSON-RPC body read (the SDK's own default is 4 MiB: a tool call needs far less). */
const BODY_LIMIT = 256 * 1024;

/** Options of {@link createMcp}. */
export interface McpOptions {
  /** The service's public address; the endpoint is `{baseUrl}/mcp`. */
  baseUrl: string;
  /**
   * Verifies the access tokens `/mcp` accepts (and only those: no API key, cookie, Basic): the
   * authorization server's verifier for the audience `{baseUrl}/mcp` (`server.bearerFor(…)`).
   */
  authenticator: Authenticator;
  /** The `/mcp` resource (RFC 9728): its metadata URL goes into every challenge. */
  resource: ProtectedResource;
  /** Counts refused credentials with every other surface. */
  guard: CredentialGuard;
  /** The browser origins allowed (the server's own and `CORS_ORIGINS`); others get 403. */
  origins: readonly string[];
  /** Where ended credentials are heard: a GET stream ends with the token that opened it. */
  revocations: Revocations;
  /** The messages resource: `post_message` creates as `POST /api/messages` does. */
  messages: Pick<ReturnType<typeof createMessages>, 'create' | 'latest'>;
  logger: Logger;
  /** Live sessions at most, over all principals (the next initialize: 503). @defaultValue 1000 */
  maxSessions?: number;
  /** Live sessions of one principal at most (the next initialize: 429). @defaultValue 20 */
  maxSessionsPerPrincipal?: number;
  /** A session without a request in flight (nor an open stream) this long ends. @defaultValue 10 min */
  idleTimeoutMs?: number;
}

interface Session {
  /** `sub` and `client_id` of the principal that opened it. */
  owner: string;
  transport: StreamableHTTPServerTransport;
  server: McpServer;
  /** Requests in flight (a GET stream counts until it closes). */
  busy: number;
  idle: ReturnType<typeof setTimeout> | undefined;
  /** Stops watching the opening credential's revocation. */
  unwatch: () => void;
  ended: boolean;
}

type WithAuth = IncomingMessage & { auth?: AuthInfo };

const ownerOf = (p: Principal) => JSON.stringify([p.sub, p.clientId ?? null]);

/** A JSON-RPC error answer without an id, worded as the SDK's transport words its own. */
function rpcError(res: ServerResponse, status: number, code: number, message: string): void {
  sendJson(res, status, { jsonrpc: '2.0', error: { code, message }, id: null });
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const isInitialize = (body: unknown) => isObject(body) && body.method === 'initialize';

/** The scopes the `tools/call` requests of `body` (one message or a batch) need. */
function scopesNeeded(body: unknown): string[] {
  const needed = new Set<string>();
  for (const message of Array.isArray(body) ? body : [body]) {
    if (!isObject(message) || message.method !== 'tools/call' || !isObject(message.params)) {
      continue;
    }
    const name = message.params.name;
    if (typeof name === 'string' && Object.hasOwn(TOOL_SCOPES, name)) {
      needed.add(TOOL_SCOPES[name]!);
    }
  }
  return [...needed].sort();
}

/** The text content of a tool's answer; `isError` for a refusal (never a success). */
function text(value: unknown, isError = false): CallToolResult {
  const content = [{ type: 'text' as const, text: JSON.stringify(value) }];
  return isError ? { content, isError: true } : { content };
}

/** What a tool handler knows of its caller (set on `req.auth` below). */
function callerOf(authInfo: AuthInfo | undefined): {
  sub: string;
  clientId: string;
  scopes: string[];
} {
  const sub = authInfo?.extra?.sub;
  if (authInfo === undefined || typeof sub !== 'string')
    throw new Error('No authenticated caller.');
  return { sub, clientId: authInfo.clientId, scopes: authInfo.scopes };
}

/** The tool refuses a caller without `scope` (`/mcp` refused it before already: defence in depth). */
function lacks(authInfo: AuthInfo | undefined, scope: string): CallToolResult | undefined {
  return callerOf(authInfo).scopes.includes(scope)
    ? undefined
    : text({ error: 'insufficient_scope', scope }, true);
}

/** One session's MCP server and its three tools. */
function mcpServer(messages: McpOptions['messages']): McpServer {
  const server = new McpServer({ name: 'portico-reference-server', version: '1.0.0' });
  server.registerTool(
    'whoami',
    { description: 'Who the access token speaks for: its sub, client_id and scopes.' },
    ({ authInfo }) => {
      const { sub, clientId, scopes } = callerOf(authInfo);
      return text({ sub, client_id: clientId, scopes });
    },
  );
  server.registerTool(
    'list_messages',
    {
      description: `The latest messages (at most ${LIST_LIMIT}, oldest first). Needs read:messages.`,
      inputSchema: { channel: z.string().optional() },
    },
    async ({ channel }, { authInfo }) =>
      lacks(authInfo, TOOL_SCOPES.list_messages!) ??
      text(await messages.latest(LIST_LIMIT, channel)),
  );
  server.registerTool(
    'post_message',
    {
      description:
        "Posts a message (as POST /api/messages does), from the token's sub. Needs write:messages.",
      inputSchema: { text: z.string(), channel: z.string().optional() },
    },
    async ({ text: body, channel }, { authInfo }) => {
      const refused = lacks(authInfo, TOOL_SCOPES.post_message!);
      if (refused !== undefined) return refused;
      try {
        const fields = channel === undefined ? { text: body } : { text: body, channel };
        return text(await messages.create(fields, callerOf(authInfo).sub));
      } catch (error) {
        // the field errors of POST /api/messages' 422, as a tool error the model can read
        if (error instanceof HttpError && error.status === 422) {
          return text({ error: 'invalid_message', errors: error.errors ?? [] }, true);
        }
        throw error;
      }
    },
  );
  return server;
}

/**
 * `POST`, `GET` and `DELETE /mcp`: stateful MCP sessions (ids from the SDK), each owned by the
 * principal that opened it, bounded in number and ended when idle, at revocation of the
 * credential that opened them, and at shutdown (`close()`).
 */
export function createMcp(options: McpOptions) {
  const { logger, revocations } = options;
  const maxSessions = options.maxSessions ?? 1000;
  const maxPerPrincipal = options.maxSessionsPerPrincipal ?? 20;
  const idleTimeoutMs = options.idleTimeoutMs ?? 10 * 60_000;
  const origins = new Set(options.origins);
  const sessions = new Map<string, Session>();
  /** Sessions being opened (their initialize not answered yet), per owner: they count too. */
  const opening = new Map<string, number>();
  let closed = false;

  const { resource } = options;
  const identity = authenticate([options.authenticator], { guard: options.guard, resource });

  /** MCP's DNS-rebinding rule: a browser Origin must be one of ours; none (non-browser) passes. */
  const checkOrigin: Middleware = (req, _res, next) => {
    const origin = req.headers.origin;
    if (origin !== undefined && !origins.has(origin)) {
      throw forbidden('This origin may not use the MCP endpoint.', { code: 'ERR_ORIGIN' });
    }
    return next();
  };

  function countOf(owner: string): number {
    let count = opening.get(owner) ?? 0;
    for (const session of sessions.values()) if (session.owner === owner) count++;
    return count;
  }

  function end(id: string | undefined, session: Session): void {
    if (session.ended) return;
    session.ended = true;
    if (id !== undefined && sessions.get(id) === session) sessions.delete(id);
    session.unwatch();
    if (session.idle !== undefined) clearTimeout(session.idle);
    session.idle = undefined;
    // the transport's close() ends its streams; the server's close() closes the transport too
    session.server.close().catch((error: unknown) => {
      logger.warn(
        { component: 'mcp', event: 'session.close-failed', err: error },
        'closing an MCP session failed',
      );
    });
  }

  function armIdle(session: Session): void {
    if (session.busy > 0 || session.ended || closed) return;
    if (session.idle !== undefined) clearTimeout(session.idle);
    session.idle = setTimeout(() => end(session.transport.sessionId, session), idleTimeoutMs);
    session.idle.unref();
  }

  /** A new session for `principal` (its initialize request is on its way to the SDK). */
  function open(principal: Principal): Session {
    if (closed) throw serviceUnavailable(5, 'The server is shutting down.');
    let pending = 0;
    for (const count of opening.values()) pending += count;
    if (sessions.size + pending >= maxSessions) {
      throw serviceUnavailable(30, 'Too many MCP sessions are open; try again later.');
    }
    const owner = ownerOf(principal);
    if (countOf(owner) >= maxPerPrincipal) {
      throw tooManyRequests(
        60,
        `At most ${maxPerPrincipal} MCP sessions may be open at once; end one (DELETE /mcp).`,
      );
    }
    const session: Session = {
      owner,
      busy: 0,
      idle: undefined,
      ended: false,
      unwatch: () => {},
      server: mcpServer(options.messages),
      transport: new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
          sessions.set(id, session);
        },
      }),
    };
    session.transport.onclose = () => end(session.transport.sessionId, session);
    session.transport.onerror = (error) => {
      logger.debug(
        { component: 'mcp', event: 'transport.error', err: error },
        'an MCP request was refused',
      );
    };
    // the session ends with the credential that opened it (a revoked token or grant)
    const ids = principal.credentialIds ?? [];
    if (ids.length > 0)
      session.unwatch = revocations.watch(ids, () => end(session.transport.sessionId, session));
    return session;
  }

  /** Reads a POST's JSON-RPC body; a body that is not JSON is answered as the SDK answers it. */
  async function readMessage(
    req: IncomingMessage,
    res: ServerResponse,
  ): Promise<{ body: unknown } | undefined> {
    try {
      return { body: await readJson(req, { limit: BODY_LIMIT }) };
    } catch (error) {
      if (error instanceof HttpError && error.code === 'ERR_INVALID_JSON') {
        rpcError(res, 400, -32700, 'Parse error: Invalid JSON');
        return undefined;
      }
      throw error; // 413, 415: problems
    }
  }

  const serve: Middleware = async (req, res) => {
    const principal = requirePrincipal(req);
    let body: unknown;
    if (req.method === 'POST') {
      const read = await readMessage(req, res);
      if (read === undefined) return;
      body = read.body;
    }
    // a tool call the token lacks the scope of: 403 with the step-up challenge, before the SDK
    // (and before a session is opened for it)
    const checkScopes = async () => {
      const needed = scopesNeeded(body);
      if (needed.length > 0) await requireScopes(needed, { resource })(req, res, async () => {});
    };
    const id = req.headers['mcp-session-id'];
    let session: Session;
    let created = false;
    if (id === undefined) {
      if (req.method !== 'POST' || !isInitialize(body)) {
        rpcError(res, 400, -32000, 'Bad Request: Mcp-Session-Id header is required');
        return;
      }
      await checkScopes();
      session = open(principal);
      created = true;
    } else {
      const found = typeof id === 'string' ? sessions.get(id) : undefined;
      // another principal's session is answered as an unknown one: no oracle
      if (found === undefined || found.owner !== ownerOf(principal)) {
        rpcError(res, 404, -32001, 'Session not found');
        return;
      }
      session = found;
      await checkScopes();
    }
    (req as WithAuth).auth = {
      token: /^(?:Bearer|DPoP)\s+(\S+)$/i.exec(req.headers.authorization ?? '')?.[1] ?? '',
      clientId: principal.clientId ?? principal.sub,
      scopes: [...principal.scopes],
      ...(principal.expiresAt !== undefined && {
        expiresAt: Math.floor(principal.expiresAt / 1000),
      }),
      extra: { sub: principal.sub },
    };
    session.busy++;
    if (session.idle !== undefined) clearTimeout(session.idle);
    session.idle = undefined;
    // a GET stream ends with the credential of its own request (revoked, or expired)
    const unbind =
      req.method === 'GET'
        ? bindToCredential(principal, {
            revocations,
            onEnd: () => session.transport.closeStandaloneSSEStream(),
          })
        : () => {};
    res.once('close', () => {
      unbind();
      session.busy--;
      armIdle(session);
    });
    const owner = session.owner;
    if (created) {
      opening.set(owner, (opening.get(owner) ?? 0) + 1);
      await session.server.connect(session.transport);
    }
    try {
      await session.transport.handleRequest(req, res, body);
    } finally {
      if (created) {
        const left = (opening.get(owner) ?? 1) - 1;
        if (left === 0) opening.delete(owner);
        else opening.set(owner, left);
        // an initialize the SDK refused opened nothing
        if (session.transport.sessionId === undefined || closed)
          end(session.transport.sessionId, session);
      }
    }
  };

  const handler = compose([checkOrigin, identity, serve]);
  const routes: Record<string, MethodTable> = {
    '/mcp': { POST: handler, GET: handler, DELETE: handler },
  };

  return {
    routes,
    /** Live sessions (tests, metrics). */
    get size(): number {
      return sessions.size;
    },
    /** Ends every session (their streams close) and refuses new ones: graceful shutdown. */
    close(): void {
      closed = true;
      for (const [id, session] of [...sessions]) end(id, session);
    },
  };
}
