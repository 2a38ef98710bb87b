// What examples/mcp/server.ts (node:http) and examples/mcp/express.ts share: the portico
// authorization server that issues the tokens, the `/mcp` protected resource (its RFC 9728
// metadata and its verifier), MCP's Origin rule, and the MCP server (@modelcontextprotocol/sdk)
// the tokens open. portico is the door; the SDK speaks MCP behind it.
import type { IncomingMessage } from 'node:http';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import {
  type AuthorizationServer,
  createAuthorizationServer,
  createKeySet,
  createSessions,
  defineClient,
  forbidden,
  hashPassword,
  MemoryClientStore,
  type Middleware,
  requirePrincipal,
  verifyPassword,
} from 'portico';
import { type ProtectedResource, protectedResource } from 'portico/auth';
import { clientStores } from 'portico/oauth';
import { z } from 'zod';

/** The scope a token needs to use the MCP endpoint. */
export const MCP_SCOPE = 'mcp:tools';
/** The demo service agent's secret (a real one comes from a secret store). */
export const AGENT_SECRET = 'mcp-agent-secret';
/** The demo user who signs in for the agents: alice / alice-password. */
export const DEMO_USER = { username: 'alice', password: 'alice-password' };

/** The MCP endpoint's resource identifier (RFC 8707, RFC 9728): `{issuer}/mcp`. */
export const mcpUrlOf = (issuer: string): string => `${issuer.replace(/\/$/, '')}/mcp`;

/** The door of the MCP server at `{issuer}/mcp`: its authorization server and its resource. */
export interface Door {
  /** The authorization server: `/authorize`, `/token`, `/register`, discovery, … */
  auth: AuthorizationServer;
  /** The `/mcp` resource: its metadata document's routes, for the challenges. */
  resource: ProtectedResource;
}

/**
 * The authorization server of `issuer`, and the `/mcp` resource it issues tokens for:
 * - a configured service agent (`mcp-agent`, client credentials) acting for itself;
 * - open registration (RFC 7591): an MCP client never met gets a `client_id` at `/register`
 *   (10 per client IP per hour), then signs its user in with PKCE;
 * - two resources (RFC 8707): the issuer itself (the default) and `/mcp`; a token carries the
 *   audience it was asked for, and `/mcp` takes only its own.
 */
export async function createDoor(issuer: string): Promise<Door> {
  const mcp = mcpUrlOf(issuer);
  const aliceHash = await hashPassword(DEMO_USER.password);
  const alice = { sub: DEMO_USER.username, name: 'Alice Example' };
  const auth = createAuthorizationServer({
    issuer,
    // the configured agent, and beside it a store for the clients that register themselves
    clients: clientStores(
      [
        await defineClient({
          clientId: 'mcp-agent', // an agent with a secret, acting for itself
          secret: AGENT_SECRET,
          grantTypes: ['client_credentials'],
          redirectUris: [],
          // `status:read` opens nothing here: a token of that scope alone gets 403 at /mcp
          scopes: [MCP_SCOPE, 'status:read'],
        }),
      ],
      new MemoryClientStore(),
    ),
    features: { registration: true },
    registration: { limit: 10, windowMs: 3_600_000 },
    resources: [{ identifier: issuer }, { identifier: mcp }],
    keys: await createKeySet(),
    users: {
      async verify(username, password) {
        const ok = await verifyPassword(
          password,
          username === DEMO_USER.username ? aliceHash : undefined,
        );
        return ok ? alice : undefined;
      },
      get: (sub) => (sub === alice.sub ? alice : undefined),
    },
    sessions: createSessions({ allowedOrigins: [new URL(issuer).origin] }),
    scopesSupported: [MCP_SCOPE, 'status:read'],
  });
  const resource = protectedResource({
    resource: mcp,
    authorizationServers: [issuer],
    scopesSupported: [MCP_SCOPE],
    resourceName: 'portico MCP example',
  });
  return { auth, resource };
}

/**
 * MCP's Origin rule (Streamable HTTP, against DNS rebinding): a request with an `Origin` other
 * than `allowed` is refused (403) before anything else; one without (not a browser) passes.
 */
export function checkOrigin(allowed: readonly string[]): Middleware {
  const origins = new Set(allowed);
  return (req, _res, next) => {
    const origin = req.headers.origin;
    if (origin !== undefined && !origins.has(origin)) {
      throw forbidden('This origin may not use the MCP endpoint.', { code: 'ERR_ORIGIN' });
    }
    return next();
  };
}

/**
 * What the SDK's transport hands its tools as `extra.authInfo`: it reads `req.auth`, so set it
 * from the principal portico's `authenticate()` found.
 */
export function setAuthInfo(req: IncomingMessage): void {
  const principal = requirePrincipal(req);
  (req as IncomingMessage & { auth?: AuthInfo }).auth = {
    token: '', // the tools need who is calling, not the token itself
    clientId: principal.clientId ?? principal.sub,
    scopes: [...principal.scopes],
    extra: { sub: principal.sub },
  };
}

/** An MCP server with one tool, `whoami`, answering who the token speaks for. */
export function mcpServer(): McpServer {
  const server = new McpServer({ name: 'portico-mcp-example', version: '1.0.0' });
  server.registerTool(
    'whoami',
    {
      description: 'Who the access token speaks for.',
      inputSchema: { greeting: z.string().optional() },
    },
    ({ greeting }, { authInfo }) => ({
      content: [
        {
          type: 'text',
          text: `${greeting ?? 'Hello'}, ${String(authInfo?.extra?.sub)} (client ${authInfo?.clientId})`,
        },
      ],
    }),
  );
  return server;
}
