// An AI agent at the reference server's door, as MCP's authorization spec (2025-06-18,
// 2025-11-25) has it, driven by the official MCP TypeScript SDK client: the 401 names the
// resource's metadata (RFC 9728), the agent finds the authorization server there, registers
// itself (RFC 7591), signs its user in with PKCE and a resource indicator (RFC 8707), calls
// tools, steps up after a 403 insufficient_scope, and loses its stream when its grant is
// revoked. Nothing here is portico's: only the contract of ../shared/reference-server.md.

import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  type OAuthClientInformationMixed,
  type OAuthClientMetadata,
  OAuthMetadataSchema,
  OAuthProtectedResourceMetadataSchema,
  type OAuthTokens,
  OpenIdProviderDiscoveryMetadataSchema,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Browser, decodeEntities, hiddenInputs, signInAndApprove } from '../helpers/browser.js';
import { hasRedis, type RedisServer, startRedis } from '../helpers/redis.js';
import { requireOpenssl } from '../helpers/tools.js';
import {
  type DocumentServer,
  makeTestTls,
  startDocumentServer,
  type TestTls,
} from '../oauth/clients/document-server.js';
import { type RunningServer, startReferenceServer } from './spawn-server.js';

/** A loopback redirect URI without a port: any port matches it (RFC 8252 §7.3). */
const REDIRECT = 'http://127.0.0.1/agent/callback';

/** What an agent keeps between runs: its registration, its tokens, its PKCE verifier. */
class AgentProvider implements OAuthClientProvider {
  info: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  verifier = '';
  /** Where the SDK sent the user's browser last. */
  authorizationUrl: URL | undefined;
  registrations = 0;

  constructor(
    private readonly grantTypes: string[] = ['authorization_code', 'refresh_token'],
    /** An https URL whose document describes the agent: no registration then. */
    readonly clientMetadataUrl?: string,
  ) {}

  get redirectUrl() {
    return REDIRECT;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'Test agent',
      redirect_uris: [REDIRECT],
      grant_types: this.grantTypes,
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.registrations++;
    this.info = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
}

const hasOpenssl = requireOpenssl();

let server: RunningServer;
let mcpUrl: URL;
/** A second server that trusts the test CA and fetches documents on loopback. */
let documentsServer: RunningServer | undefined;
let tls: TestTls | undefined;
let docs: DocumentServer | undefined;

beforeAll(async () => {
  server = await startReferenceServer();
  mcpUrl = new URL(`${server.url.replace(/\/$/, '')}/mcp`);
  if (!hasOpenssl) return;
  tls = makeTestTls();
  docs = await startDocumentServer(tls);
  documentsServer = await startReferenceServer(
    { CLIENT_METADATA_ALLOW_PRIVATE: '1', NODE_EXTRA_CA_CERTS: tls.caPath },
    60_000,
  );
}, 90_000);

afterAll(async () => {
  await Promise.all([server?.stop(), documentsServer?.stop()]);
  await docs?.close();
  tls?.remove();
});

/** The user at the browser: signs in, approves, and hands the code back to the agent. */
async function userApproves(
  provider: AgentProvider,
  transport: StreamableHTTPClientTransport,
  at = server,
) {
  const url = provider.authorizationUrl;
  if (url === undefined) throw new Error('the SDK did not start an authorization');
  provider.authorizationUrl = undefined;
  const callback = new URL(await signInAndApprove(at.url, url, 'alice'));
  const code = callback.searchParams.get('code');
  if (code === null) throw new Error(`no code in ${callback.href}`);
  await transport.finishAuth(code);
}

/** Connects as the SDK does: a 401 starts the authorization, then the agent connects again. */
async function connectedAgent(provider: AgentProvider, at = server) {
  const url = new URL(`${at.url.replace(/\/$/, '')}/mcp`);
  let transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
  let client = new Client({ name: 'test-agent', version: '1.0.0' });
  await expect(client.connect(transport)).rejects.toBeInstanceOf(UnauthorizedError);
  await userApproves(provider, transport, at);
  transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
  client = new Client({ name: 'test-agent', version: '1.0.0' });
  await client.connect(transport);
  return { client, transport };
}

/** What RFC 7591 answers beside the client's metadata: how to manage it (RFC 7592). */
interface Registration {
  client_id: string;
  registration_client_uri: string;
  registration_access_token: string;
}

/** Registers the agent by hand, as the SDK would, and keeps the whole answer. */
async function register(provider: AgentProvider): Promise<Registration> {
  const res = await fetch(`${server.url}/register`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(provider.clientMetadata),
  });
  expect(res.status).toBe(201);
  const registration = (await res.json()) as Registration;
  provider.info = { ...registration, redirect_uris: [REDIRECT] };
  return registration;
}

const textOf = (result: unknown) =>
  JSON.parse((result as { content: { type: string; text: string }[] }).content[0]!.text);

describe('an MCP agent at the reference server', () => {
  it("serves discovery and the resource's metadata as the SDK's own schemas read them", async () => {
    const get = async (path: string) => (await fetch(`${server.url}${path}`)).json();
    OAuthMetadataSchema.parse(await get('/.well-known/oauth-authorization-server'));
    const openid = OpenIdProviderDiscoveryMetadataSchema.parse(
      await get('/.well-known/openid-configuration'),
    );
    expect(openid.registration_endpoint).toBe(`${server.url}/register`);
    expect(openid.code_challenge_methods_supported).toEqual(['S256']);
    expect(openid.client_id_metadata_document_supported).toBe(true);
    const prm = OAuthProtectedResourceMetadataSchema.parse(
      await get('/.well-known/oauth-protected-resource/mcp'),
    );
    expect(prm.resource).toBe(mcpUrl.href);
    expect(prm.authorization_servers).toEqual([server.url]);
  });

  it('discovers, registers, signs in with PKCE for /mcp, and calls tools', async () => {
    const provider = new AgentProvider();
    const { client } = await connectedAgent(provider);
    expect(provider.registrations).toBe(1);
    expect(provider.info?.client_id).toMatch(/\S/);
    const claims = decodeJwt(provider.saved!.access_token);
    expect(claims.aud).toBe(mcpUrl.href);
    const tools = await client.listTools();
    expect(tools.tools.map((t) => t.name).sort()).toEqual([
      'list_messages',
      'post_message',
      'whoami',
    ]);
    const me = textOf(await client.callTool({ name: 'whoami', arguments: {} }));
    expect(me).toMatchObject({ sub: 'alice', client_id: provider.info!.client_id });
    const posted = textOf(
      await client.callTool({ name: 'post_message', arguments: { text: 'hello from an agent' } }),
    );
    expect(posted).toMatchObject({ text: 'hello from an agent', from: 'alice' });
    const listed = textOf(await client.callTool({ name: 'list_messages', arguments: {} }));
    expect(JSON.stringify(listed)).toContain('hello from an agent');
    await client.close();
  });

  it("refuses the /mcp token at the API, and the API's token at /mcp", async () => {
    const provider = new AgentProvider();
    const { client } = await connectedAgent(provider);
    const token = provider.saved!.access_token;
    const api = await fetch(`${server.url}/api/me`, {
      headers: { Authorization: `Bearer ${token}` },
    });
    expect(api.status).toBe(401);
    expect(api.headers.get('www-authenticate')).toMatch(/^Bearer .*error="invalid_token"/);
    await client.close();
  });

  it('steps up after a 403 insufficient_scope: a new authorization for the scope named', async () => {
    // no refresh token: the SDK's step-up then asks the user again (a refresh keeps the scope)
    const provider = new AgentProvider(['authorization_code']);
    let transport = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider });
    let client = new Client({ name: 'test-agent', version: '1.0.0' });
    await expect(client.connect(transport)).rejects.toBeInstanceOf(UnauthorizedError);
    // the user grants reading only
    provider.authorizationUrl!.searchParams.set('scope', 'read:messages');
    await userApproves(provider, transport);
    transport = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider });
    client = new Client({ name: 'test-agent', version: '1.0.0' });
    await client.connect(transport);
    expect(provider.saved!.refresh_token).toBeUndefined();
    expect(textOf(await client.callTool({ name: 'list_messages', arguments: {} }))).toBeDefined();
    const call = client.callTool({ name: 'post_message', arguments: { text: 'stepped up' } });
    await expect(call).rejects.toBeInstanceOf(UnauthorizedError);
    const asked = provider.authorizationUrl!;
    expect(asked.searchParams.get('scope')).toBe('write:messages');
    expect(asked.searchParams.get('resource')).toBe(mcpUrl.href);
    await userApproves(provider, transport);
    const posted = await client.callTool({
      name: 'post_message',
      arguments: { text: 'stepped up' },
    });
    expect(textOf(posted)).toMatchObject({ text: 'stepped up', from: 'alice' });
    await client.close();
  });

  it.each([
    [
      'its token is revoked (RFC 7009)',
      (provider: AgentProvider, _registration: Registration) =>
        fetch(`${server.url}/revoke`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({
            token: provider.saved!.access_token,
            client_id: provider.info!.client_id,
          }),
        }),
      200,
    ],
    [
      'its registration is deleted (RFC 7592)',
      (_provider: AgentProvider, registration: Registration) =>
        fetch(registration.registration_client_uri, {
          method: 'DELETE',
          headers: { Authorization: `Bearer ${registration.registration_access_token}` },
        }),
      204,
    ],
  ] as const)("ends the agent's stream and its calls when %s", async (_when, end, status) => {
    // registered beforehand (the SDK keeps no registration access token)
    const provider = new AgentProvider();
    const registration = await register(provider);
    const { client, transport } = await connectedAgent(provider);
    // the SDK's session ends; the agent opens one by hand, with a GET stream of its own
    await transport.terminateSession();
    await client.close();
    const base = {
      Authorization: `Bearer ${provider.saved!.access_token}`,
      'Mcp-Protocol-Version': LATEST_PROTOCOL_VERSION,
    };
    const post = (body: unknown, headers: Record<string, string> = {}) =>
      fetch(mcpUrl, {
        method: 'POST',
        headers: {
          ...base,
          ...headers,
          Accept: 'application/json, text/event-stream',
          'Content-Type': 'application/json',
        },
        body: JSON.stringify(body),
      });
    const opened = await post({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: LATEST_PROTOCOL_VERSION,
        capabilities: {},
        clientInfo: { name: 'by-hand', version: '1' },
      },
    });
    expect(opened.status).toBe(200);
    await opened.body?.cancel();
    const session = { 'Mcp-Session-Id': opened.headers.get('mcp-session-id')! };
    const initialized = await post(
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      session,
    );
    expect(initialized.status).toBe(202);
    const stream = await fetch(mcpUrl, {
      headers: { ...base, ...session, Accept: 'text/event-stream' },
    });
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const ended = (async () => {
      const reader = stream.body!.getReader();
      for (;;) if ((await reader.read()).done) return 'ended';
    })().catch(() => 'ended');
    expect((await end(provider, registration)).status).toBe(status);
    const outcome = await Promise.race([
      ended,
      new Promise((resolve) => setTimeout(() => resolve('still open'), 5_000)),
    ]);
    expect(outcome).toBe('ended');
    const after = await post({ jsonrpc: '2.0', id: 2, method: 'tools/list' }, session);
    expect(after.status).toBe(401);
    expect(after.headers.get('www-authenticate')).toMatch(/^Bearer /);
  });

  it.skipIf(!hasOpenssl)(
    'signs in as a client ID metadata document, without registering, and calls a tool',
    async () => {
      const at = documentsServer!;
      const agentUrl = docs!.json('/agents/test-agent.json', (url) => ({
        client_id: url,
        client_name: 'Test agent (document)',
        redirect_uris: [REDIRECT],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
      }));
      const provider = new AgentProvider(['authorization_code'], agentUrl);
      const { client } = await connectedAgent(provider, at);
      expect(provider.registrations, 'the SDK saved the URL as its client id').toBe(1);
      expect(provider.info!.client_id).toBe(agentUrl);
      const me = textOf(await client.callTool({ name: 'whoami', arguments: {} }));
      expect(me).toMatchObject({ sub: 'alice', client_id: agentUrl });
      expect(docs!.hits.get('/agents/test-agent.json')).toBeGreaterThanOrEqual(1);
      await client.close();
    },
  );
});

/**
 * The user's browser at the service's public origin, whose requests a balancer hands to the
 * process at `base`: signs alice in, approves, and answers where the code goes.
 */
async function approveThrough(base: string, publicOrigin: string, target: URL): Promise<URL> {
  const browser = new Browser(publicOrigin);
  const to = (url: string | URL) => {
    const at = new URL(url, target);
    return new URL(`${at.pathname}${at.search}`, base);
  };
  const submit = async (page: Response, fields: Record<string, string>, url: URL) => {
    const html = await page.text();
    const body = new URLSearchParams(hiddenInputs(html));
    for (const [name, value] of Object.entries(fields)) body.set(name, value);
    const action = /<form[^>]*action="([^"]*)"/i.exec(html)?.[1];
    return browser.fetch(to(action ? decodeEntities(action) : url), {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body,
    });
  };
  const signIn = await browser.fetch(to(target));
  expect(signIn.status).toBe(200);
  let answer = await submit(signIn, { username: 'alice', password: 'alice-password' }, target);
  for (let hops = 0; hops < 3; hops++) {
    const location = answer.headers.get('location');
    if (location !== null && new URL(location, target).origin !== publicOrigin) {
      return new URL(location);
    }
    const page = location === null ? answer : await browser.fetch(to(location));
    expect(page.status).toBe(200);
    answer = await submit(page, { decision: 'approve' }, target);
  }
  throw new Error('no redirect back to the agent');
}

describe.skipIf(!hasRedis)('an MCP agent at two processes of one service, on one Redis', () => {
  const PUBLIC = 'http://portico.test';
  let redis: RedisServer;
  let a: RunningServer;
  let b: RunningServer;
  beforeAll(async () => {
    redis = await startRedis();
    const env = { REDIS_URL: redis.url, BASE_URL: PUBLIC };
    [a, b] = await Promise.all([
      startReferenceServer(env, 45_000),
      startReferenceServer(env, 45_000),
    ]);
  }, 90_000);
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await redis?.stop();
  });

  it('registers and signs in at one process, and calls tools at the other', async () => {
    // the balancer in front: the authorization server's paths go to A, /mcp to B
    const balancer = (input: string | URL | Request, init?: RequestInit) => {
      const url = new URL(input instanceof Request ? input.url : input);
      const to = url.pathname.startsWith('/mcp') ? b : a;
      return fetch(new URL(`${url.pathname}${url.search}`, to.url), init);
    };
    const provider = new AgentProvider();
    const publicMcp = new URL(`${PUBLIC}/mcp`);
    let transport = new StreamableHTTPClientTransport(publicMcp, {
      authProvider: provider,
      fetch: balancer,
    });
    let client = new Client({ name: 'test-agent', version: '1.0.0' });
    await expect(client.connect(transport)).rejects.toBeInstanceOf(UnauthorizedError);
    // the user's browser reaches A too
    const asked = provider.authorizationUrl!;
    expect(asked.searchParams.get('resource')).toBe(publicMcp.href);
    const callback = await approveThrough(a.url, PUBLIC, asked);
    await transport.finishAuth(callback.searchParams.get('code')!);
    expect(decodeJwt(provider.saved!.access_token).aud).toBe(publicMcp.href);
    transport = new StreamableHTTPClientTransport(publicMcp, {
      authProvider: provider,
      fetch: balancer,
    });
    client = new Client({ name: 'test-agent', version: '1.0.0' });
    await client.connect(transport);
    const me = textOf(await client.callTool({ name: 'whoami', arguments: {} }));
    expect(me).toMatchObject({ sub: 'alice', client_id: provider.info!.client_id });
    await client.close();
  });
});
