// authenticate() and the WebSocket upgrade run one guard → identify → publish sequence
// (src/auth/credential-check.ts): over one real server, the same credential gets the same
// answer, the same count against a shared guard and the same diagnostics message on both.
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { afterEach, describe, expect, it } from 'vitest';
import { toNodeListener } from '../../src/adapters/node.js';
import { authenticate } from '../../src/auth/authenticate.js';
import type { Authenticator } from '../../src/auth/authenticator.js';
import { basicAuth } from '../../src/auth/basic.js';
import { createCredentialGuard } from '../../src/auth/credential-guard.js';
import { invalidCredentials } from '../../src/auth/errors.js';
import { compose } from '../../src/core/compose.js';
import { serviceUnavailable } from '../../src/core/errors/errors.js';
import { channels, silentLogger } from '../../src/diagnostics/index.js';
import { createUpgradeHandler } from '../../src/ws/upgrade.js';
import { closeAll, listen, parseReply, rawRequest } from '../helpers/http.js';

const GOOD = `Basic ${Buffer.from('alice:secret').toString('base64')}`;
const WRONG = `Basic ${Buffer.from('alice:wrong').toString('base64')}`;

const cleanups: (() => void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) cleanup();
  await closeAll();
});

/** The messages published on channel `name` until the test ends, without their `req`. */
function published(name: string): Record<string, unknown>[] {
  const messages: Record<string, unknown>[] = [];
  const listener = (message: unknown) => {
    const { req: _req, ...rest } = message as Record<string, unknown>;
    messages.push(rest);
  };
  subscribe(name, listener);
  cleanups.push(() => unsubscribe(name, listener));
  return messages;
}

/** A mechanism whose `X-Probe` header says what it does: `bad` refuses, `down` is a 503. */
const probe: Authenticator = {
  scheme: 'Probe',
  challenge: 'Probe realm="api"',
  headers: ['X-Probe'],
  authenticate(req) {
    const probe = req.headers['x-probe'];
    if (probe === 'bad') throw invalidCredentials('Probe realm="api"', 'The probe is not valid.');
    if (probe === 'down') throw serviceUnavailable(7, 'The probe store is down.');
    return undefined;
  },
};

/** One server: `GET /api` behind authenticate(), `/ws` upgrades, one guard for both. */
async function start(limit: number) {
  const guard = createCredentialGuard({ limit });
  const basic = basicAuth({
    realm: 'api',
    verify: (username, password) =>
      username === 'alice' && password === 'secret'
        ? { sub: 'alice', scopes: [], method: 'basic' }
        : undefined,
  });
  const authenticators = [basic, probe];
  const app = compose([
    authenticate(authenticators, { guard }),
    (_req, res) => {
      res.end('ok');
    },
  ]);
  const listening = await listen(toNodeListener(app, { logger: silentLogger }));
  listening.server.on(
    'upgrade',
    createUpgradeHandler({
      path: '/ws',
      authenticators,
      guard,
      logger: silentLogger,
      onConnection: (ws) => ws.terminate(),
    }),
  );
  /** The raw reply to `GET` on `path`, with `headers`, over HTTP or asking to upgrade. */
  const send = async (surface: 'http' | 'ws', headers: Record<string, string>) => {
    const head =
      surface === 'http'
        ? 'GET /api HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n'
        : 'GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
          'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n';
    const fields = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
    const reply = parseReply(await rawRequest(listening.port, `${head}${fields.join('')}\r\n`));
    const problem =
      reply.headers['content-type'] === 'application/problem+json'
        ? (JSON.parse(reply.body) as Record<string, unknown>)
        : undefined;
    return {
      status: reply.status,
      // the problem as a client reads it (`instance`, the path, differs by surface)
      problem: problem === undefined ? undefined : { ...problem, instance: undefined },
      challenges: reply.lines.filter((line) => /^www-authenticate:/i.test(line)),
      retryAfter: reply.headers['retry-after'],
    };
  };
  return { send };
}

describe('authenticate() and the WebSocket upgrade: one sequence', () => {
  it('answer a wrong credential alike and spend one guard together, then both answer its 429', async () => {
    const { send } = await start(2);
    const refusals = published(channels.authRefused);
    const overHttp = await send('http', { Authorization: WRONG });
    const overWs = await send('ws', { Authorization: WRONG });
    expect(overHttp).toEqual({
      status: 401,
      problem: expect.objectContaining({ type: 'urn:portico:problem:invalid-credentials' }),
      challenges: ['WWW-Authenticate: Basic realm="api", charset="UTF-8"'],
      retryAfter: undefined,
    });
    expect(overWs).toEqual(overHttp);
    // two refusals, one over each, spent the budget of 2: the third attempt is not verified
    const spent = await send('ws', { Authorization: WRONG });
    expect(spent.status).toBe(429);
    expect(spent.problem).toMatchObject({ status: 429 });
    expect(spent.retryAfter).toMatch(/^\d+$/);
    // now a right credential is refused unverified, on both surfaces, with the same answer
    const rightOverHttp = await send('http', { Authorization: GOOD });
    const rightOverWs = await send('ws', { Authorization: GOOD });
    expect(rightOverHttp.status).toBe(429);
    expect({ ...rightOverWs, retryAfter: 0 }).toEqual({ ...rightOverHttp, retryAfter: 0 });
    expect(refusals).toEqual([
      { status: 401, code: 'ERR_AUTH_INVALID', mechanism: 'Basic', surface: 'http' },
      { status: 401, code: 'ERR_AUTH_INVALID', mechanism: 'Basic', surface: 'ws' },
      { status: 429, code: 'ERR_CREDENTIALS_THROTTLED', mechanism: undefined, surface: 'ws' },
      { status: 429, code: 'ERR_CREDENTIALS_THROTTLED', mechanism: undefined, surface: 'http' },
      { status: 429, code: 'ERR_CREDENTIALS_THROTTLED', mechanism: undefined, surface: 'ws' },
    ]);
  });

  it('answer a missing credential with the same challenges, uncounted by the guard', async () => {
    const { send } = await start(1);
    const refusals = published(channels.authRefused);
    const overHttp = await send('http', {});
    const overWs = await send('ws', {});
    expect(overHttp.status).toBe(401);
    expect(overHttp.problem).toMatchObject({ status: 401 });
    expect(overHttp.challenges).toEqual([
      'WWW-Authenticate: Basic realm="api", charset="UTF-8"',
      'WWW-Authenticate: Probe realm="api"',
    ]);
    expect(overWs).toEqual(overHttp);
    // a missing credential spends nothing: alice still gets in, over both
    expect((await send('http', { Authorization: GOOD })).status).toBe(200);
    expect((await send('ws', { Authorization: GOOD })).status).toBe(101);
    expect(refusals.map((m) => m.surface)).toEqual(['http', 'ws']);
  });

  it('publish the same success over both', async () => {
    const { send } = await start(1);
    const successes = published(channels.authSucceeded);
    expect((await send('http', { Authorization: GOOD })).status).toBe(200);
    expect((await send('ws', { Authorization: GOOD })).status).toBe(101);
    expect(successes).toEqual([
      { mechanism: 'basic', sub: 'alice', surface: 'http' },
      { mechanism: 'basic', sub: 'alice', surface: 'ws' },
    ]);
  });

  // the upgrade used to publish an authenticator's own 503 as a refusal (authenticate() never
  // did): only the guard's 503 is one, as docs/observability.md says
  it('answer a mechanism’s 503 (its store down) alike, published as a refusal by neither', async () => {
    const { send } = await start(1);
    const refusals = published(channels.authRefused);
    const overHttp = await send('http', { 'X-Probe': 'down' });
    const overWs = await send('ws', { 'X-Probe': 'down' });
    expect(overHttp.status).toBe(503);
    expect(overHttp.retryAfter).toBe('7');
    expect(overWs).toEqual(overHttp);
    expect(refusals).toEqual([]);
    // nor counted by the guard (limit 1): a refusal of the probe is still a 401, then its 429
    expect((await send('ws', { 'X-Probe': 'bad' })).status).toBe(401);
    expect((await send('http', { 'X-Probe': 'bad' })).status).toBe(429);
  });
});
