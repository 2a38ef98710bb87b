// What examples/mcp/server.ts (node:http) and examples/mcp/express.ts share: the portico
// authorization server that issues the tokens, and the MCP server (@modelcontextprotocol/sdk)
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
  MemoryClientStore,
  requirePrincipal,
} from 'portico';
import { z } from 'zod';

/** The scope a token needs to use the MCP endpoint. */
export const MCP_SCOPE = 'mcp:tools';
/** The demo agent's secret (a real one comes from a secret store). */
export const AGENT_SECRET = 'mcp-agent-secret';

/** The authorization server of `issuer`: one confidential agent, client credentials. */
export async function authorizationServer(issuer: string): Promise<AuthorizationServer> {
  const clients = new MemoryClientStore([
    await defineClient({
      clientId: 'mcp-agent', // an agent with a secret, acting for itself
      secret: AGENT_SECRET,
      grantTypes: ['client_credentials'],
      redirectUris: [],
      // `status:read` opens nothing here: a token of that scope alone gets 403 at /mcp
      scopes: [MCP_SCOPE, 'status:read'],
    }),
  ]);
  // REGISTRATION: MCP clients that register themselves (RFC 7591 `/register`) go here
  return createAuthorizationServer({
    issuer,
    clients,
    keys: await createKeySet(),
    // no user signs in in this example: the agent acts for itself
    users: { verify: async () => undefined, get: () => undefined },
    sessions: createSessions({ allowedOrigins: [new URL(issuer).origin] }),
    scopesSupported: [MCP_SCOPE, 'status:read'],
  });
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
