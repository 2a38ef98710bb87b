// examples/mcp: the minimal MCP server behind portico, on node:http and on Express, run
// in-process over real sockets and driven by the example's own agent (the SDK's Client with an
// OAuthClientProvider): from the 401 to the tool call, and the refusals on the way.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentToken, run, runAgent } from '../../examples/mcp/client.js';
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

  it('the agent discovers from the 401, registers, gets a /mcp token by code + PKCE, calls the tool', async () => {
    const lines: string[] = [];
    const result = await runAgent(new URL(`${issuer}/mcp`), (line) => lines.push(line));
    expect(result.clientId).toMatch(/^[\w-]{16,}$/);
    expect(result).toMatchObject({
      tools: ['whoami'],
      whoami: `Hi, alice (client ${result.clientId})`,
    });
    // the URL the user was sent to: PKCE S256, the resource indicator, the scope of the challenge
    const asked = new URL(lines[0]!.replace('open in a browser: ', ''));
    expect(asked.pathname).toBe('/authorize');
    expect(asked.searchParams.get('code_challenge_method')).toBe('S256');
    expect(asked.searchParams.get('resource')).toBe(`${issuer}/mcp`);
    expect(asked.searchParams.get('scope')).toBe('mcp:tools');
  });

  it('the configured service agent, with a client-credentials token for /mcp, calls the tool', async () => {
    const token = await agentToken(issuer, { resource: `${issuer}/mcp` });
    const result = await run(new URL(`${issuer}/mcp`), token);
    expect(result).toEqual({ tools: ['whoami'], whoami: 'Hi, mcp-agent (client mcp-agent)' });
  });

  it('without a token: 401, Bearer first, naming the metadata and the scope; the metadata validates', async () => {
    const res = await postMcp({});
    expect(res.status).toBe(401);
    const challenge = res.headers.get('www-authenticate') ?? '';
    expect(challenge).toMatch(/^Bearer\b/);
    const metadataUrl = /resource_metadata="([^"]+)"/.exec(challenge)?.[1];
    expect(metadataUrl).toBe(`${issuer}/.well-known/oauth-protected-resource/mcp`);
    expect(challenge).toContain('scope="mcp:tools"');
    expect(await res.json()).toMatchObject({ status: 401 });
    const metadata = await fetch(metadataUrl!);
    expect(metadata.status).toBe(200);
    expect(await metadata.json()).toMatchObject({
      resource: `${issuer}/mcp`,
      authorization_servers: [issuer],
      scopes_supported: ['mcp:tools'],
      bearer_methods_supported: ['header'],
    });
    const discovery = await fetch(`${issuer}/.well-known/oauth-authorization-server`);
    expect(await discovery.json()).toMatchObject({
      issuer,
      registration_endpoint: `${issuer}/register`,
      code_challenge_methods_supported: ['S256'],
    });
  });

  it("a token of the issuer's default resource is refused at /mcp (audience)", async () => {
    const token = await agentToken(issuer); // no `resource`: aud is the issuer
    const res = await postMcp({ Authorization: `Bearer ${token}` });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toContain('error="invalid_token"');
  });

  it("a browser Origin that is not the server's: 403 before the token is looked at", async () => {
    const token = await agentToken(issuer, { resource: `${issuer}/mcp` });
    const res = await postMcp({ Authorization: `Bearer ${token}`, Origin: 'https://evil.example' });
    expect(res.status).toBe(403);
    expect(await res.json()).toMatchObject({
      status: 403,
      detail: 'This origin may not use the MCP endpoint.',
    });
  });

  it('a token without the scope: 403 insufficient_scope naming mcp:tools', async () => {
    const res = await fetch(`${issuer}/token`, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/x-www-form-urlencoded',
        Authorization: `Basic ${Buffer.from(`mcp-agent:${AGENT_SECRET}`).toString('base64')}`,
      },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        scope: 'status:read',
        resource: `${issuer}/mcp`,
      }),
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
