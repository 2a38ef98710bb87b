// examples/mcp: the minimal MCP server behind portico, on node:http and on Express, run
// in-process over real sockets and driven by the example's own client (the SDK's Client).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentToken, run } from '../../examples/mcp/client.js';
import { createApp as createExpressApp } from '../../examples/mcp/express.js';
import { createApp as createNodeApp } from '../../examples/mcp/server.js';
import { AGENT_SECRET } from '../../examples/mcp/shared.js';

const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: {
    protocolVersion: '2025-06-18',
    capabilities: {},
    clientInfo: { name: 't', version: '1' },
  },
};

describe.each([
  ['node:http', createNodeApp],
  ['Express', createExpressApp],
])('the MCP example on %s', (_name, createApp) => {
  let front: Server;
  let issuer: string;
  let close: () => Promise<void>;

  beforeAll(async () => {
    // the issuer is the real listening URL: listen first, then build the app behind it
    front = createServer();
    await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
    issuer = `http://127.0.0.1:${(front.address() as AddressInfo).port}`;
    const app = await createApp(issuer);
    front.on('request', (req, res) => app.server.emit('request', req, res));
    close = app.close;
  });
  afterAll(async () => {
    front.closeAllConnections();
    await new Promise((resolve) => front.close(resolve));
    await close();
  });

  const postMcp = (headers: Record<string, string>) =>
    fetch(`${issuer}/mcp`, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        ...headers,
      },
      body: JSON.stringify(INITIALIZE),
    });

  it('the SDK client, with a token of the agent, lists and calls the tool', async () => {
    const token = await agentToken(issuer);
    const result = await run(new URL(`${issuer}/mcp`), token);
    expect(result).toEqual({ tools: ['whoami'], whoami: 'Hi, mcp-agent (client mcp-agent)' });
  });

  it('without a token: 401 with the Bearer challenge first, and the SDK never answers', async () => {
    const res = await postMcp({});
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer\b/);
    expect(await res.json()).toMatchObject({ status: 401 });
  });

  it('a token without the scope: 403 insufficient_scope naming mcp:tools', async () => {
    const res = await fetch(`${issuer}/token`, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/x-www-form-urlencoded',
        Authorization: `Basic ${Buffer.from(`mcp-agent:${AGENT_SECRET}`).toString('base64')}`,
      },
      body: new URLSearchParams({ grant_type: 'client_credentials', scope: 'status:read' }),
    });
    expect(res.status).toBe(200);
    const granted = (await res.json()) as { access_token: string; scope: string };
    expect(granted.scope).toBe('status:read');
    const refused = await postMcp({ Authorization: `Bearer ${granted.access_token}` });
    expect(refused.status).toBe(403);
    const challenge = refused.headers.get('www-authenticate') ?? '';
    expect(challenge).toMatch(/^Bearer\b/);
    expect(challenge).toContain('error="insufficient_scope"');
    expect(challenge).toContain('scope="mcp:tools"');
  });

  it('a forged token: 401 invalid_token', async () => {
    const res = await postMcp({ Authorization: 'Bearer eyJhbGciOiJub25lIn0.e30.' });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toContain('error="invalid_token"');
  });
});
