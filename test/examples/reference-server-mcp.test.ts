// Issue 40, contract "The MCP endpoint": the reference server's /mcp, driven by the official MCP
// TypeScript SDK client (and by hand where the SDK client hides the answer), over real sockets
// against a spawned reference server.

import { createHash, randomUUID } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect as connectStream } from '../helpers/sse.js';
import {
  asClient,
  basic,
  openEvents,
  revokeToken,
  SERVICE,
  signIn,
  type Tokens,
  userTokens,
  WEB,
} from './guarded-helpers.js';
import { within } from './live-clients.js';
import { type RunningServer, startReferenceServer } from './spawn-server.js';

const DEMO_KEY = 'demo-key-of-the-mcp-suite-000000000001';
const CORS_ORIGIN = 'http://localhost:5173';
let server: RunningServer;
let mcpUrl: URL;

beforeAll(async () => {
  server = await startReferenceServer({
    DEMO_API_KEY: DEMO_KEY,
    RATE_LIMIT: '1000',
    CORS_ORIGINS: CORS_ORIGIN,
  });
  mcpUrl = new URL(`${server.url}/mcp`);
});
afterAll(async () => {
  await server?.stop();
});

/** The resource every token here is asked for (RFC 8707): `/mcp` takes no other audience. */
const resource = () => `${server.url}/mcp`;

/** A demo-service token (client credentials) for `scope`. */
async function serviceToken(scope: string): Promise<string> {
  const res = await asClient(server.url, SERVICE, {
    grant_type: 'client_credentials',
    scope,
    resource: resource(),
  });
  expect(res.status, 'the client credentials grant').toBe(200);
  return ((await res.json()) as Tokens).access_token;
}

/** An MCP client connected (initialized, with a session) with `token`. */
async function connected(token: string) {
  const client = new Client({ name: 'portico-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(mcpUrl, {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  expect(transport.sessionId, 'the SDK session id').toMatch(/^[0-9a-f-]{36}$/);
  return { client, transport, sessionId: transport.sessionId! };
}

/** The JSON of the first text content of a tool's answer. */
function json(result: object): unknown {
  const [first] = (result as { content: { type: string; text: string }[] }).content;
  expect(first?.type).toBe('text');
  return JSON.parse(first!.text);
}

const MCP_HEADERS = {
  'Content-Type': 'application/json',
  Accept: 'application/json, text/event-stream',
  'Mcp-Protocol-Version': LATEST_PROTOCOL_VERSION,
};

/** A hand-made POST /mcp of `body` with `headers`. */
function post(body: unknown, headers: Record<string, string>): Promise<Response> {
  return fetch(mcpUrl, {
    method: 'POST',
    headers: { ...MCP_HEADERS, ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

const initialize = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: {
    protocolVersion: LATEST_PROTOCOL_VERSION,
    capabilities: {},
    clientInfo: { name: 'by-hand', version: '1' },
  },
};

const call = (id: number, name: string, args: Record<string, unknown> = {}) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: args },
});

/** A session opened by hand (initialize, then its notification): no GET stream of the SDK's. */
async function openedByHand(token: string): Promise<string> {
  const auth = { Authorization: `Bearer ${token}` };
  const res = await post(initialize, auth);
  expect(res.status).toBe(200);
  const sessionId = res.headers.get('mcp-session-id')!;
  await res.body?.cancel();
  const notified = await post(
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    { ...auth, 'Mcp-Session-Id': sessionId },
  );
  expect(notified.status).toBe(202);
  return sessionId;
}

/** The Bearer challenge first (the SDK reads only the first). */
function expectBearerFirst(res: Response) {
  const challenge = res.headers.get('www-authenticate') ?? '';
  expect(challenge, 'a challenge').toMatch(/^Bearer\b/);
  return challenge;
}

describe('/mcp with the SDK client', () => {
  it('lists the three tools, and whoami answers the token’s sub, client_id and scopes', async () => {
    const { client } = await connected(await serviceToken('read:messages write:messages'));
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(['list_messages', 'post_message', 'whoami']);
    const me = json(await client.callTool({ name: 'whoami', arguments: {} }));
    expect(me).toEqual({
      sub: 'demo-service',
      client_id: 'demo-service',
      scopes: ['read:messages', 'write:messages'],
    });
    await client.close();
  });

  it('post_message creates a message as POST /api/messages does: on /events, in list_messages', async () => {
    const events = await openEvents(server.url, { 'X-API-Key': DEMO_KEY });
    expect(events.status).toBe(200);
    const tokens = await userTokens(server.url, WEB, 'read:messages write:messages', {
      resource: resource(),
    });
    const { client } = await connected(tokens.access_token);
    const text = `posted over MCP ${Date.now()}`;
    const result = await client.callTool({
      name: 'post_message',
      arguments: { text, channel: 'mcp' },
    });
    expect(result.isError).toBeFalsy();
    const message = json(result) as Record<string, unknown>;
    expect(message).toMatchObject({ text, channel: 'mcp', from: 'alice' });
    expect(message.id).toEqual(expect.any(String));
    // the /events stream (opened with an API key) hears it, as it hears POST /api/messages
    const seen = await events.until((all) => all.includes(text), 3000);
    expect(seen).toContain(String(message.id));
    events.destroy();
    // and the REST API shows the very same message
    const rest = await fetch(`${server.url}/api/messages/${message.id}`, {
      headers: { 'X-API-Key': DEMO_KEY },
    });
    expect(rest.status).toBe(200);
    expect(await rest.json()).toEqual(message);
    const listed = json(await client.callTool({ name: 'list_messages', arguments: {} }));
    expect(listed).toEqual(expect.arrayContaining([message]));
    const other = json(
      await client.callTool({ name: 'list_messages', arguments: { channel: 'none-such' } }),
    );
    expect(other).toEqual([]);
    await client.close();
  });

  it('a message the API would refuse is a tool error, never a success, and nothing is created', async () => {
    const { client } = await connected(await serviceToken('read:messages write:messages'));
    const before = json(await client.callTool({ name: 'list_messages', arguments: {} }));
    for (const args of [
      { text: '' },
      { text: 'x'.repeat(1001) },
      { text: 'ok', channel: 'a\u0000b' },
    ]) {
      const result = await client.callTool({ name: 'post_message', arguments: args });
      expect(result.isError, JSON.stringify(args).slice(0, 40)).toBe(true);
      expect(json(result)).toMatchObject({ error: 'invalid_message' });
    }
    // a type the schema refuses: the SDK's own tool error
    const typed = await client.callTool({ name: 'post_message', arguments: { text: 5 } });
    expect(typed.isError).toBe(true);
    const after = json(await client.callTool({ name: 'list_messages', arguments: {} }));
    expect(after).toEqual(before);
    await client.close();
  });

  it('a tool whose scope the token lacks: HTTP 403 insufficient_scope naming it, before the SDK', async () => {
    const token = await serviceToken('read:messages');
    const { client, sessionId } = await connected(token);
    // the SDK client sees the HTTP status (its auth provider would step up from here)
    const refused = await client
      .callTool({ name: 'post_message', arguments: { text: 'not allowed' } })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(refused).toBeInstanceOf(StreamableHTTPError);
    expect((refused as StreamableHTTPError).code).toBe(403);
    // by hand: the challenge and the problem
    const headers = { Authorization: `Bearer ${token}`, 'Mcp-Session-Id': sessionId };
    const res = await post(call(7, 'post_message', { text: 'not allowed' }), headers);
    expect(res.status).toBe(403);
    const challenge = expectBearerFirst(res);
    expect(challenge).toContain('error="insufficient_scope"');
    expect(challenge).toContain('scope="write:messages"');
    // a problem (as JSON: the MCP client's Accept names application/json, not problem+json)
    expect(res.headers.get('content-type')).toMatch(/^application\/(?:problem\+)?json/);
    expect(await res.json()).toMatchObject({
      type: expect.stringContaining('insufficient-scope'),
      status: 403,
      requiredScopes: ['write:messages'],
    });
    // a batch with one such call among allowed ones: 403 too, nothing of it runs
    const batch = await post(
      [call(8, 'whoami'), call(9, 'post_message', { text: 'in a batch' })],
      headers,
    );
    expect(batch.status).toBe(403);
    expect(batch.headers.get('www-authenticate')).toContain('scope="write:messages"');
    const listed = json(await client.callTool({ name: 'list_messages', arguments: {} }));
    expect(JSON.stringify(listed)).not.toContain('in a batch');
    await client.close();
  });

  it('a write-only token may post but not list (the other scope)', async () => {
    const token = await serviceToken('write:messages');
    const { sessionId } = await connected(token);
    const headers = { Authorization: `Bearer ${token}`, 'Mcp-Session-Id': sessionId };
    const res = await post(call(3, 'list_messages'), headers);
    expect(res.status).toBe(403);
    expect(res.headers.get('www-authenticate')).toContain('scope="read:messages"');
  });

  it('DELETE ends the session: its id is then unknown (404)', async () => {
    const token = await serviceToken('read:messages');
    const { client, transport, sessionId } = await connected(token);
    await transport.terminateSession();
    const res = await post(call(2, 'whoami'), {
      Authorization: `Bearer ${token}`,
      'Mcp-Session-Id': sessionId,
    });
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ error: { code: -32001 } });
    await client.close();
  });
});

describe('/mcp refusals', () => {
  it('no credential, an API key, the session cookie or Basic: 401 with the Bearer challenge first', async () => {
    const cookie = await signIn(server.url);
    const cases: Record<string, Record<string, string>> = {
      none: {},
      'API key': { 'X-API-Key': DEMO_KEY },
      'session cookie': { Cookie: cookie, Origin: server.url },
      Basic: { Authorization: basic('alice', 'alice-password') },
    };
    for (const [what, headers] of Object.entries(cases)) {
      const res = await post(initialize, headers);
      expect(res.status, what).toBe(401);
      expectBearerFirst(res);
      expect(res.headers.get('mcp-session-id'), what).toBeNull();
    }
    // the same credentials do open /api/me: only /mcp refuses them
    const me = await fetch(`${server.url}/api/me`, { headers: { 'X-API-Key': DEMO_KEY } });
    expect(me.status).toBe(200);
  });

  it('a bad token: 401 invalid_token', async () => {
    const res = await post(initialize, { Authorization: 'Bearer not-a-token' });
    expect(res.status).toBe(401);
    expect(expectBearerFirst(res)).toContain('error="invalid_token"');
  });

  it('a browser Origin neither its own nor a CORS origin: 403; its own and CORS ones pass', async () => {
    const token = await serviceToken('read:messages');
    const auth = { Authorization: `Bearer ${token}` };
    for (const origin of ['http://evil.example', 'null', `${server.url}.evil.example`]) {
      const res = await post(initialize, { ...auth, Origin: origin });
      expect(res.status, origin).toBe(403);
      expect(res.headers.get('content-type')).toMatch(/^application\/(?:problem\+)?json/);
      expect(await res.json()).toMatchObject({
        status: 403,
        detail: expect.stringContaining('origin'),
      });
      expect(res.headers.get('mcp-session-id')).toBeNull();
    }
    for (const origin of [server.url, CORS_ORIGIN]) {
      const res = await post(initialize, { ...auth, Origin: origin });
      expect(res.status, origin).toBe(200);
      expect(res.headers.get('mcp-session-id')).toMatch(/^[0-9a-f-]{36}$/);
    }
  });

  it('a session presented by another principal is unknown (404), as an unknown one is', async () => {
    const { client, sessionId } = await connected(await serviceToken('read:messages'));
    const alice = await userTokens(server.url, WEB, 'read:messages', { resource: resource() });
    const foreign = await post(call(4, 'whoami'), {
      Authorization: `Bearer ${alice.access_token}`,
      'Mcp-Session-Id': sessionId,
    });
    const unknown = await post(call(4, 'whoami'), {
      Authorization: `Bearer ${alice.access_token}`,
      'Mcp-Session-Id': '00000000-0000-4000-8000-000000000000',
    });
    expect(foreign.status).toBe(404);
    expect(unknown.status).toBe(404);
    expect(await foreign.json()).toEqual(await unknown.json());
    // nor may it end it
    const ended = await fetch(mcpUrl, {
      method: 'DELETE',
      headers: { Authorization: `Bearer ${alice.access_token}`, 'Mcp-Session-Id': sessionId },
    });
    expect(ended.status).toBe(404);
    // the owner still uses it
    expect(json(await client.callTool({ name: 'whoami', arguments: {} }))).toMatchObject({
      sub: 'demo-service',
    });
    await client.close();
  });

  it('bad JSON: 400 JSON-RPC parse error; no session id on a later request: 400', async () => {
    const token = await serviceToken('read:messages');
    const bad = await post('{"jsonrpc":', { Authorization: `Bearer ${token}` });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ jsonrpc: '2.0', error: { code: -32700 }, id: null });
    const orphan = await post(call(1, 'whoami'), { Authorization: `Bearer ${token}` });
    expect(orphan.status).toBe(400);
    expect(await orphan.json()).toMatchObject({ error: { code: -32000 } });
  });
});

describe('/mcp with a DPoP-bound token', () => {
  it('answers with a proof per request; without one, or as a Bearer token: 401', async () => {
    const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
    const jwk = await exportJWK(publicKey);
    const proof = (htm: string, htu: string, token?: string) =>
      new SignJWT({
        htm,
        htu,
        iat: Math.floor(Date.now() / 1000),
        jti: randomUUID(),
        ...(token !== undefined && {
          ath: createHash('sha256').update(token).digest('base64url'),
        }),
      })
        .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk })
        .sign(privateKey);
    const res = await asClient(
      server.url,
      SERVICE,
      { grant_type: 'client_credentials', scope: 'read:messages', resource: resource() },
      { headers: { DPoP: await proof('POST', `${server.url}/token`) } },
    );
    expect(res.status).toBe(200);
    const tokens = (await res.json()) as Tokens & { token_type: string };
    expect(tokens.token_type).toBe('DPoP');
    const token = tokens.access_token;
    const opened = await post(initialize, {
      Authorization: `DPoP ${token}`,
      DPoP: await proof('POST', mcpUrl.href, token),
    });
    expect(opened.status).toBe(200);
    const sessionId = opened.headers.get('mcp-session-id')!;
    await opened.body?.cancel();
    const noProof = await post(call(2, 'whoami'), {
      Authorization: `DPoP ${token}`,
      'Mcp-Session-Id': sessionId,
    });
    expect(noProof.status).toBe(401);
    const asBearer = await post(call(2, 'whoami'), {
      Authorization: `Bearer ${token}`,
      'Mcp-Session-Id': sessionId,
    });
    expect(asBearer.status).toBe(401);
    const called = await post(call(3, 'whoami'), {
      Authorization: `DPoP ${token}`,
      DPoP: await proof('POST', mcpUrl.href, token),
      'Mcp-Session-Id': sessionId,
    });
    expect(called.status).toBe(200);
    expect(await called.text()).toContain('demo-service');
  });
});

describe('/mcp and the end of its credential', () => {
  it('revoking the grant closes the open GET stream, and the next request is 401', async () => {
    const tokens = await userTokens(server.url, WEB, 'read:messages offline_access', {
      resource: resource(),
    });
    const sessionId = await openedByHand(tokens.access_token);
    const stream = await connectStream({ port: Number(mcpUrl.port) }, '/mcp', {
      Accept: 'text/event-stream',
      Authorization: `Bearer ${tokens.access_token}`,
      'Mcp-Session-Id': sessionId,
      'Mcp-Protocol-Version': LATEST_PROTOCOL_VERSION,
    });
    expect(stream.status).toBe(200);
    let ended = false;
    void stream.ended.then(() => {
      ended = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(ended, 'the stream stays open while the grant lives').toBe(false);
    await revokeToken(server.url, WEB, tokens.refresh_token!);
    await within(stream.ended, 3000, 'the GET stream ends');
    const next = await post(call(5, 'whoami'), {
      Authorization: `Bearer ${tokens.access_token}`,
      'Mcp-Session-Id': sessionId,
    });
    expect(next.status).toBe(401);
    expect(expectBearerFirst(next)).toContain('error="invalid_token"');
  });
});

describe('/mcp at shutdown', () => {
  it('a graceful shutdown ends every session and its GET stream, and the process exits 0', async () => {
    const own = await startReferenceServer({ RATE_LIMIT: '1000' });
    try {
      const res = await asClient(own.url, SERVICE, {
        grant_type: 'client_credentials',
        scope: 'read:messages',
        resource: `${own.url}/mcp`,
      });
      const token = ((await res.json()) as Tokens).access_token;
      const opened = await fetch(`${own.url}/mcp`, {
        method: 'POST',
        headers: { ...MCP_HEADERS, Authorization: `Bearer ${token}` },
        body: JSON.stringify(initialize),
      });
      expect(opened.status).toBe(200);
      const sessionId = opened.headers.get('mcp-session-id')!;
      await opened.body?.cancel();
      const stream = await connectStream({ port: Number(new URL(own.url).port) }, '/mcp', {
        Accept: 'text/event-stream',
        Authorization: `Bearer ${token}`,
        'Mcp-Session-Id': sessionId,
      });
      expect(stream.status).toBe(200);
      const exit = own.stop('SIGTERM');
      await within(stream.ended, 5000, 'the GET stream ends');
      expect(await within(exit, 10_000, 'exit')).toBe(0);
    } finally {
      await own.stop('SIGKILL');
    }
  });
});
