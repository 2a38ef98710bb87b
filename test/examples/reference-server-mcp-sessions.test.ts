// Issue 40, the reference server's /mcp (examples/reference-server/mcp.ts) in-process, with small
// bounds and timeouts: how many sessions live, when an idle one ends, a session and a GET
// stream ending with their credential (revoked, expired), and close() at shutdown. Tokens are
// HS256 JWTs of a test issuer (jwtBearer): the endpoint takes its authenticator as a parameter.
import { createServer } from 'node:http';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { SignJWT } from 'jose';
import {
  createCredentialGuard,
  createRouter,
  jwtBearer,
  type Revocations,
  toNodeListener,
} from 'portico';
import { createRevocations, protectedResource } from 'portico/auth';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../examples/reference-server/logging.js';
import { createMcp } from '../../examples/reference-server/mcp.js';
import { createMessages } from '../../examples/reference-server/messages.js';
import { type Listening, listen } from '../helpers/http.js';
import { connect as connectStream } from '../helpers/sse.js';
import { within } from './live-clients.js';

const SECRET = 'a-secret-of-the-mcp-sessions-suite-0123456789';
const ISSUER = 'https://issuer.test';
const AUDIENCE = 'https://service.test';

let open: Listening | undefined;
afterEach(async () => {
  await open?.close();
  open = undefined;
});

let jti = 0;
/** An HS256 access token of `sub` (client `client`) with `scope`, expiring in `ttl` seconds. */
function token(
  sub: string,
  options: { client?: string; scope?: string; ttl?: number; grant?: string } = {},
) {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({
    client_id: options.client ?? 'agent',
    scope: options.scope ?? 'read:messages',
    ...(options.grant !== undefined && { grant_id: options.grant }),
  })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(sub)
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setJti(`jti-${++jti}`)
    .setIssuedAt(now)
    .setExpirationTime(now + (options.ttl ?? 300))
    .sign(new TextEncoder().encode(SECRET));
}

/** /mcp alone on a real socket, with `bounds`. */
async function start(
  bounds: { maxSessions?: number; maxSessionsPerPrincipal?: number; idleTimeoutMs?: number } = {},
) {
  const revocations: Revocations = createRevocations();
  const mcp = createMcp({
    baseUrl: 'http://127.0.0.1',
    resource: protectedResource({
      resource: 'http://127.0.0.1/mcp',
      authorizationServers: ['http://127.0.0.1'],
    }),
    authenticator: jwtBearer({ secret: SECRET, issuer: ISSUER, audience: AUDIENCE }),
    guard: createCredentialGuard(),
    origins: [],
    revocations,
    messages: createMessages(),
    logger: createLogger('silent'),
    ...bounds,
  });
  open = await listen(createServer(toNodeListener([createRouter(mcp.routes)])));
  return { mcp, revocations, url: `${open.url}/mcp`, port: open.port };
}

const HEADERS = {
  'Content-Type': 'application/json',
  Accept: 'application/json, text/event-stream',
  'Mcp-Protocol-Version': LATEST_PROTOCOL_VERSION,
};

const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: {
    protocolVersion: LATEST_PROTOCOL_VERSION,
    capabilities: {},
    clientInfo: { name: 'sessions-suite', version: '1' },
  },
};

/** POST /mcp of `body` with `bearer` (and `session`); the answer read to its end. */
async function post(url: string, bearer: string, body: unknown, session?: string) {
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      ...HEADERS,
      Authorization: `Bearer ${bearer}`,
      ...(session !== undefined && { 'Mcp-Session-Id': session }),
    },
    body: JSON.stringify(body),
  });
  return { status: res.status, session: res.headers.get('mcp-session-id'), text: await res.text() };
}

/** A session initialized (and notified) by `bearer`: its id. */
async function initialized(url: string, bearer: string): Promise<string> {
  const res = await post(url, bearer, INITIALIZE);
  expect(res.status, res.text).toBe(200);
  const done = await post(
    url,
    bearer,
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    res.session!,
  );
  expect(done.status).toBe(202);
  return res.session!;
}

const whoami = {
  jsonrpc: '2.0',
  id: 2,
  method: 'tools/call',
  params: { name: 'whoami', arguments: {} },
};

/** The GET stream of `session`. */
const stream = (port: number, bearer: string, session: string) =>
  connectStream({ port }, '/mcp', {
    Accept: 'text/event-stream',
    Authorization: `Bearer ${bearer}`,
    'Mcp-Session-Id': session,
    'Mcp-Protocol-Version': LATEST_PROTOCOL_VERSION,
  });

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('/mcp sessions', () => {
  it('are bounded: over maxSessions 503, over one principal’s share 429; an ended one frees its place', async () => {
    const { url, mcp } = await start({ maxSessions: 3, maxSessionsPerPrincipal: 2 });
    const alice = await token('alice');
    const first = await initialized(url, alice);
    await initialized(url, alice);
    const third = await post(url, alice, INITIALIZE);
    expect(third.status).toBe(429);
    expect(third.session).toBeNull();
    await initialized(url, await token('bob'));
    expect(mcp.size).toBe(3);
    const full = await post(url, await token('carol'), INITIALIZE);
    expect(full.status).toBe(503);
    // DELETE of one frees a place
    const ended = await fetch(url, {
      method: 'DELETE',
      headers: { ...HEADERS, Authorization: `Bearer ${alice}`, 'Mcp-Session-Id': first },
    });
    expect(ended.status).toBe(200);
    expect(mcp.size).toBe(2);
    await initialized(url, await token('carol'));
  });

  it('the same sub of another client is another principal: the session is unknown to it', async () => {
    const { url } = await start();
    const session = await initialized(url, await token('alice', { client: 'one' }));
    const other = await post(url, await token('alice', { client: 'two' }), whoami, session);
    expect(other.status).toBe(404);
    const same = await post(url, await token('alice', { client: 'one' }), whoami, session);
    expect(same.status).toBe(200);
    expect(same.text).toContain('\\"client_id\\":\\"one\\"');
  });

  it('an idle one ends after idleTimeoutMs, not while a request (a GET stream) is open', async () => {
    const { url, port, mcp } = await start({ idleTimeoutMs: 300 });
    const bearer = await token('alice');
    const kept = await initialized(url, bearer);
    const idle = await initialized(url, bearer);
    const live = await stream(port, bearer, kept);
    expect(live.status).toBe(200);
    await pause(700);
    expect((await post(url, bearer, whoami, idle)).status, 'the idle one').toBe(404);
    expect((await post(url, bearer, whoami, kept)).status, 'the one with a stream').toBe(200);
    expect(mcp.size).toBe(1);
    live.destroy();
    await pause(700);
    expect((await post(url, bearer, whoami, kept)).status, 'idle once its stream closed').toBe(404);
    expect(mcp.size).toBe(0);
  });

  it('a revoked grant ends the session it opened, and its GET stream', async () => {
    const { url, port, mcp, revocations } = await start();
    const bearer = await token('alice', { grant: 'g-1' });
    const session = await initialized(url, bearer);
    const live = await stream(port, bearer, session);
    expect(live.status).toBe(200);
    await revocations.revoke(['grant:g-1']);
    await within(live.ended, 2000, 'the GET stream ends');
    expect(mcp.size).toBe(0);
  });

  it('a GET stream ends when its token expires (the session stays for a fresh token)', async () => {
    const { url, port } = await start();
    const session = await initialized(url, await token('alice'));
    const short = await token('alice', { ttl: 2 });
    const live = await stream(port, short, session);
    expect(live.status).toBe(200);
    await within(live.ended, 4000, 'the GET stream ends at exp');
    const fresh = await post(url, await token('alice'), whoami, session);
    expect(fresh.status).toBe(200);
  });

  it('close() ends every session and its stream, and refuses new ones (503)', async () => {
    const { url, port, mcp } = await start();
    const bearer = await token('alice');
    const session = await initialized(url, bearer);
    const live = await stream(port, bearer, session);
    mcp.close();
    await within(live.ended, 2000, 'the GET stream ends');
    expect(mcp.size).toBe(0);
    expect((await post(url, bearer, INITIALIZE)).status).toBe(503);
  });
});
