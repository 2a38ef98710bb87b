// The same minimal MCP server as examples/mcp/server.ts, on Express 5: portico's
// authorization server and authentication in front of the SDK's transport.
// node --import tsx examples/mcp/express.ts   (env: PORT; listens on 127.0.0.1)
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import express from 'express';
import { authenticate, createRouter, requireScopes, securityHeaders } from 'portico';
import { expressErrorHandler, expressNotFound, toExpress } from 'portico/express';
import { checkOrigin, createDoor, MCP_SCOPE, mcpServer, setAuthInfo } from './shared.js';

export async function createApp(
  issuer: string,
): Promise<{ server: Server; close(): Promise<void> }> {
  const { auth, resource } = await createDoor(issuer);
  const app = express();
  app.use(toExpress(securityHeaders()));
  // discovery, /authorize, /token, /register, /jwks, … of the authorization server, and
  // GET /.well-known/oauth-protected-resource/mcp (RFC 9728)
  app.use(toExpress(createRouter({ ...auth.routes, ...resource.routes })));
  app.post(
    '/mcp',
    // Origin, then tokens of /mcp only with the scope; challenges name resource_metadata
    toExpress([
      checkOrigin([new URL(issuer).origin]),
      authenticate([auth.bearerFor(resource.identifier)], { resource, scopes: () => [MCP_SCOPE] }),
      requireScopes([MCP_SCOPE], { resource }),
    ]),
    express.json(),
    async (req, res) => {
      setAuthInfo(req);
      const server = mcpServer();
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      res.on('close', () => void server.close());
      await server.connect(transport);
      // (as IncomingMessage: another package in this repository types Express's `req.auth`)
      await transport.handleRequest(req as IncomingMessage, res, req.body);
    },
  );
  app.use(expressNotFound()); // anything else: a 404 problem
  app.use(expressErrorHandler()); // last: every error as application/problem+json
  const server = createServer(app);
  return {
    server,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const port = Number(process.env.PORT || 3011);
  const { server } = await createApp(`http://127.0.0.1:${port}`);
  server.listen(port, '127.0.0.1', () => {
    const { port: actual } = server.address() as AddressInfo;
    console.log(`MCP server (Express) at http://127.0.0.1:${actual}/mcp`);
  });
}
