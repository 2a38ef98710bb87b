// A minimal MCP server on node:http, protected by a portico authorization server in the same
// process. Stateless Streamable HTTP: each POST /mcp gets a fresh SDK server and transport.
// The door: /mcp's metadata (RFC 9728) named by its 401s, discovery (RFC 8414), open
// registration (RFC 7591), code + PKCE with `resource` (RFC 8707), tokens of /mcp only.
// node --import tsx examples/mcp/server.ts   (env: PORT; listens on 127.0.0.1)
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  authenticate,
  compose,
  createRouter,
  type Middleware,
  readJson,
  requestId,
  requireScopes,
  securityHeaders,
  toNodeListener,
} from 'portico';
import { checkOrigin, createDoor, MCP_SCOPE, mcpServer, setAuthInfo } from './shared.js';

/** POST /mcp: one JSON-RPC message (or batch), answered by a fresh server and transport. */
const mcp: Middleware = async (req, res) => {
  setAuthInfo(req);
  const server = mcpServer();
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  res.on('close', () => void server.close());
  await server.connect(transport);
  await transport.handleRequest(req, res, await readJson(req));
};

export async function createApp(
  issuer: string,
): Promise<{ server: Server; close(): Promise<void> }> {
  const { auth, resource } = await createDoor(issuer);
  const app = toNodeListener([
    requestId(),
    securityHeaders(),
    createRouter({
      ...auth.routes, // discovery, /authorize, /token, /register, /jwks, … (the AS)
      ...resource.routes, // GET /.well-known/oauth-protected-resource/mcp (RFC 9728)
      '/mcp': {
        // a browser Origin must be ours; then only tokens whose audience is /mcp (RFC 8707),
        // with the scope. 401/403 carry the Bearer challenge naming resource_metadata and scope
        // (stateless: no GET stream, no session to DELETE; the router answers them 405)
        POST: compose([
          checkOrigin([new URL(issuer).origin]),
          authenticate([auth.bearerFor(resource.identifier)], {
            resource,
            scopes: () => [MCP_SCOPE],
          }),
          requireScopes([MCP_SCOPE], { resource }),
          mcp,
        ]),
      },
    }),
  ]);
  const server = createServer(app);
  return {
    server,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const port = Number(process.env.PORT || 3010);
  const { server } = await createApp(`http://127.0.0.1:${port}`);
  server.listen(port, '127.0.0.1', () => {
    const { port: actual } = server.address() as AddressInfo;
    console.log(`MCP server at http://127.0.0.1:${actual}/mcp`);
  });
}
