// An MCP agent for examples/mcp: the SDK's client with an `OAuthClientProvider`. Told only the
// MCP server's URL, it gets a 401 whose challenge names the resource's metadata (RFC 9728),
// finds the authorization server there and its endpoints by discovery (RFC 8414), registers
// itself (RFC 7591), sends its user to /authorize with PKCE and `resource=<the /mcp URL>` (RFC
// 8707), trades the code for a token of /mcp, then lists and calls the tools.
//
// node --import tsx examples/mcp/client.ts                 (starts server.ts in-process)
// MCP_URL=http://127.0.0.1:3010/mcp node --import tsx examples/mcp/client.ts
//
// The user's step is automated here: `actAsUser()` plays the demo user alice at the sign-in
// and consent pages, the way a test drives a browser. A real agent opens the printed URL in the
// user's browser and takes the code from the redirect to its loopback `redirect_uri`.
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import {
  type OAuthClientProvider,
  UnauthorizedError,
} from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import { AGENT_SECRET, DEMO_USER, MCP_SCOPE } from './shared.js';

/** A loopback redirect URI without a port: any port matches it (RFC 8252 §7.3). */
const REDIRECT = 'http://127.0.0.1/callback';

/** What the agent keeps (in memory here; a real one keeps it on disk): registration, tokens. */
export class AgentProvider implements OAuthClientProvider {
  info: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  verifier = '';
  /** Where the SDK wants the user's browser to go (set on a 401 or a 403 step-up). */
  authorizationUrl: URL | undefined;

  get redirectUrl() {
    return REDIRECT;
  }
  /** What the agent registers (RFC 7591): a public client, code + PKCE, a loopback redirect. */
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'portico MCP example agent',
      redirect_uris: [REDIRECT],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
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

/** The hidden inputs of a page's form, and its action. */
function formOf(html: string, page: URL): { action: URL; fields: URLSearchParams } {
  const decode = (text: string) =>
    text.replace(/&(amp|quot|#39|lt|gt);/g, (_, name: string) => {
      const named: Record<string, string> = { amp: '&', quot: '"', '#39': "'", lt: '<', gt: '>' };
      return named[name]!;
    });
  const fields = new URLSearchParams();
  for (const tag of html.match(/<input[^>]*>/gi) ?? []) {
    if (!/type="hidden"/i.test(tag)) continue;
    const name = /name="([^"]*)"/i.exec(tag)?.[1];
    if (name) fields.set(decode(name), decode(/value="([^"]*)"/i.exec(tag)?.[1] ?? ''));
  }
  const action = /<form[^>]*action="([^"]*)"/i.exec(html)?.[1];
  return { action: new URL(action ? decode(action) : page.href, page), fields };
}

/**
 * DEMO ONLY: the user at the browser. Opens `authorizationUrl`, signs in as alice, approves the
 * consent page (it marks the registered agent's name as unverified), and answers the code the
 * authorization server redirected back with.
 */
export async function actAsUser(authorizationUrl: URL): Promise<string> {
  const cookies = new Map<string, string>();
  const origin = authorizationUrl.origin;
  const browse = async (url: URL, body?: URLSearchParams) => {
    const res = await fetch(url, {
      method: body === undefined ? 'GET' : 'POST',
      redirect: 'manual',
      headers: {
        Origin: origin,
        Cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; '),
        ...(body !== undefined && { 'Content-Type': 'application/x-www-form-urlencoded' }),
      },
      ...(body !== undefined && { body }),
    });
    for (const line of res.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const eq = pair.indexOf('=');
      cookies.set(pair.slice(0, eq), pair.slice(eq + 1));
    }
    return res;
  };
  const submit = async (page: Response, at: URL, extra: Record<string, string>) => {
    const { action, fields } = formOf(await page.text(), at);
    for (const [k, v] of Object.entries(extra)) fields.set(k, v);
    return browse(action, fields);
  };
  const signIn = await browse(authorizationUrl);
  if (signIn.status !== 200) throw new Error(`the sign-in page answered ${signIn.status}`);
  let answer = await submit(signIn, authorizationUrl, DEMO_USER);
  let location = answer.headers.get('location');
  if (location === null || new URL(location, origin).origin === origin) {
    // the consent page (after a redirect to it, or answered at once)
    const at = location === null ? authorizationUrl : new URL(location, origin);
    const consent = location === null ? answer : await browse(at);
    answer = await submit(consent, at, { decision: 'approve' });
    location = answer.headers.get('location');
  }
  const code = location === null ? null : new URL(location).searchParams.get('code');
  if (code === null) throw new Error(`no code came back (${answer.status} ${location ?? ''})`);
  return code;
}

/** Connects as an MCP client does: the first try gets a 401 and starts the authorization. */
export async function connectAgent(
  mcpUrl: URL,
  provider: AgentProvider,
  user: (authorizationUrl: URL) => Promise<string> = actAsUser,
): Promise<Client> {
  const client = new Client({ name: 'portico-mcp-example-agent', version: '1.0.0' });
  const first = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider });
  try {
    await client.connect(first);
    return client;
  } catch (error) {
    if (!(error instanceof UnauthorizedError) || provider.authorizationUrl === undefined) {
      throw error;
    }
  }
  const url = provider.authorizationUrl;
  provider.authorizationUrl = undefined;
  await first.finishAuth(await user(url)); // code + verifier (+ resource) at /token
  const again = new Client({ name: 'portico-mcp-example-agent', version: '1.0.0' });
  await again.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }));
  return again;
}

/** The agent at `mcpUrl`, from the 401 to the tool call: its client, the tools, whoami. */
export async function runAgent(
  mcpUrl: URL,
  log: (line: string) => void = () => {},
): Promise<{ clientId: string; tools: string[]; whoami: string }> {
  const provider = new AgentProvider();
  const client = await connectAgent(mcpUrl, provider, async (url) => {
    log(`open in a browser: ${url.href}`);
    return actAsUser(url);
  });
  try {
    const { tools } = await client.listTools();
    const result = await client.callTool({ name: 'whoami', arguments: { greeting: 'Hi' } });
    const [content] = result.content as { type: string; text: string }[];
    return {
      clientId: String(provider.info?.client_id),
      tools: tools.map((tool) => tool.name),
      whoami: content?.text ?? '',
    };
  } finally {
    await client.close();
  }
}

/**
 * A token of the configured service agent `mcp-agent` (client credentials, no user), for the
 * resource `resource` (RFC 8707; the issuer's default resource when left out).
 */
export async function agentToken(
  issuer: string,
  options: { resource?: string; scope?: string } = {},
): Promise<string> {
  const res = await fetch(`${issuer}/token`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/x-www-form-urlencoded',
      Authorization: `Basic ${Buffer.from(`mcp-agent:${AGENT_SECRET}`).toString('base64')}`,
    },
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      scope: options.scope ?? MCP_SCOPE,
      ...(options.resource !== undefined && { resource: options.resource }),
    }),
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
    stop = () =>
      new Promise((resolve) => {
        front.closeAllConnections();
        front.close(() => resolve());
      });
  }
  console.log(await runAgent(mcpUrl, console.log));
  await stop();
}
