// An MCP client of examples/mcp: gets a token from the authorization server (client
// credentials), then connects to /mcp with the SDK's client and calls `whoami`.
// node --import tsx examples/mcp/client.ts                 (starts server.ts in-process)
// MCP_URL=http://127.0.0.1:3010/mcp node --import tsx examples/mcp/client.ts
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { AGENT_SECRET, MCP_SCOPE } from './shared.js';

/** A token of the demo agent from the authorization server at `issuer`. */
export async function agentToken(issuer: string): Promise<string> {
  // REGISTRATION/RESOURCE: an MCP client would discover the authorization server from the
  // resource's metadata, register itself and ask for `resource=<the /mcp URL>`
  const res = await fetch(`${issuer}/token`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/x-www-form-urlencoded',
      Authorization: `Basic ${Buffer.from(`mcp-agent:${AGENT_SECRET}`).toString('base64')}`,
    },
    body: new URLSearchParams({ grant_type: 'client_credentials', scope: MCP_SCOPE }),
  });
  if (!res.ok) throw new Error(`the token endpoint answered ${res.status}`);
  return ((await res.json()) as { access_token: string }).access_token;
}

/** Connects to the MCP server at `mcpUrl` with `token`; resolves with its tools and whoami. */
export async function run(
  mcpUrl: URL,
  token: string,
): Promise<{ tools: string[]; whoami: string }> {
  const client = new Client({ name: 'portico-mcp-example-client', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(mcpUrl, {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  try {
    const { tools } = await client.listTools();
    const result = await client.callTool({ name: 'whoami', arguments: { greeting: 'Hi' } });
    const [content] = result.content as { type: string; text: string }[];
    return { tools: tools.map((tool) => tool.name), whoami: content?.text ?? '' };
  } finally {
    await client.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  let mcpUrl = process.env.MCP_URL === undefined ? undefined : new URL(process.env.MCP_URL);
  let stop = async () => {};
  if (mcpUrl === undefined) {
    // no server given: start examples/mcp/server.ts here, on a free port
    const { createServer } = await import('node:http');
    const { createApp } = await import('./server.js');
    const front = createServer();
    await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
    const issuer = `http://127.0.0.1:${(front.address() as AddressInfo).port}`;
    const app = await createApp(issuer);
    front.on('request', (req, res) => app.server.emit('request', req, res));
    mcpUrl = new URL(`${issuer}/mcp`);
    stop = () => new Promise((resolve) => front.close(() => resolve()));
  }
  const token = await agentToken(mcpUrl.origin);
  console.log(await run(mcpUrl, token));
  await stop();
}
