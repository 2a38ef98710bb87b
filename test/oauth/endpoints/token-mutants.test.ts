// The token endpoint (src/oauth/endpoints/token.ts) at the edges the main suites leave out:
// the warning for a grant type a client names but no grant answers (its fields and text, only
// for types the client names, at most 1000 client and type pairs), the owner named by an
// error of `grants`, and the credential guard on refusals once the client authenticated (a
// client assertion replayed in a race, refused at commit, counts; a guard that answers 429 or
// cannot count while counting a refused grant answers for the request). Real sockets, each
// test its own server.
import { Agent } from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import { createCredentialGuard } from '../../../src/auth/credential-guard.js';
import { MemoryReplayStore, type ReplayStore } from '../../../src/auth/replay/store.js';
import type { OAuthClient } from '../../../src/oauth/clients/client.js';
import { MemoryClientStore } from '../../../src/oauth/clients/store.js';
import { createTokenEndpoint } from '../../../src/oauth/endpoints/token.js';
import { closeAll, json, type Listening, request } from '../../helpers/http.js';
import { captureLogger } from '../../helpers/logger.js';
import {
  assertionForm,
  clientAssertion,
  errorOf,
  newKey,
  postToken,
  replayClients,
  startReplayServer,
} from '../replay-fixtures.js';
import { startTokenServer } from '../token-fixtures.js';

afterAll(closeAll);

const UNANSWERED = 'urn:example:grant-type:unanswered';

/** A public client (authenticating with `none`) that names these grant types. */
const publicClient = (clientId: string, grantTypes: string[]): OAuthClient => ({
  clientId,
  grantTypes,
  redirectUris: [],
  scopes: [],
});

/** A token server over these clients, logging into a captured logger. */
async function warningServer(clients: OAuthClient[]) {
  const logger = captureLogger();
  const { server } = await startTokenServer({ clients: new MemoryClientStore(clients), logger });
  const warnings = () => logger.lines.filter((line) => line.level === 'warn');
  return { server, warnings };
}

describe('a grant type the client names but no grant answers', () => {
  it('is unsupported, and the deployment is told once, with the client and the type', async () => {
    const { server, warnings } = await warningServer([publicClient('odd', [UNANSWERED])]);
    for (let i = 0; i < 2; i++) {
      const reply = await postToken(server, { grant_type: UNANSWERED, client_id: 'odd' });
      expect({ status: reply.status, error: errorOf(reply) }).toEqual({
        status: 400,
        error: 'unsupported_grant_type',
      });
    }
    expect(warnings()).toEqual([
      {
        level: 'warn',
        fields: {
          component: 'oauth',
          event: 'token.unregistered_grant',
          clientId: 'odd',
          grantType: UNANSWERED,
        },
        message: 'a client names a grant type no grant of this server answers (not in `grants`)',
      },
    ]);
  });

  it('tells nothing when the client does not name the type either', async () => {
    const { server, warnings } = await warningServer([
      publicClient('plain', ['authorization_code']),
    ]);
    const reply = await postToken(server, { grant_type: UNANSWERED, client_id: 'plain' });
    expect(errorOf(reply)).toBe('unsupported_grant_type');
    expect(warnings()).toEqual([]);
  });

  it('tells of 1000 client and type pairs at most', async () => {
    const types = Array.from({ length: 1_002 }, (_, i) => `${UNANSWERED}:${i}`);
    const { server, warnings } = await warningServer([publicClient('many', types)]);
    const agent = new Agent({ keepAlive: true, maxSockets: 8 });
    try {
      for (let i = 0; i < types.length; i += 32) {
        const replies = await Promise.all(
          types.slice(i, i + 32).map((grant_type) =>
            request(server, '/token', {
              method: 'POST',
              headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
              body: new URLSearchParams({ grant_type, client_id: 'many' }).toString(),
              agent,
            }),
          ),
        );
        for (const reply of replies) expect(reply.status).toBe(400);
      }
    } finally {
      agent.destroy();
    }
    expect(warnings()).toHaveLength(1_000);
  });
});

describe('createTokenEndpoint options', () => {
  it('names itself when grants is not a list', async () => {
    const { ctx } = await startTokenServer();
    expect(() => createTokenEndpoint(ctx, { grants: {} as unknown as [] })).toThrow(
      expect.objectContaining({
        code: 'ERR_INVALID_OPTION',
        message: 'createTokenEndpoint(): `grants` must be a list of grants ([...defaultGrants, …])',
      }),
    );
  });
});

let addresses = 0;
/** A fresh client address, as the trusted (loopback) proxy reports it. */
const from = () => ({ 'X-Forwarded-For': `198.51.100.${++addresses}` });

/** A made-up code of the public client `demo-spa`: refused, invalid_grant. */
const madeUpCode = (server: Listening, headers: Record<string, string>) =>
  postToken(
    server,
    {
      grant_type: 'authorization_code',
      client_id: 'demo-spa',
      code: 'not-a-code',
      code_verifier: 'v'.repeat(43),
      redirect_uri: 'http://127.0.0.1:5173/callback',
    },
    headers,
  );

describe('the credential guard on refusals after client authentication', () => {
  it('counts a client assertion refused at commit, replayed by a request that raced it', async () => {
    const clientKey = await newKey('key-client-1');
    const clients = replayClients({ 'key-client': clientKey, 'other-key-client': await newKey() });
    // a store whose `seen` has not heard of the winner yet: the replay is refused at commit
    const recorded = new MemoryReplayStore();
    const racing: ReplayStore = {
      seen: () => false,
      remember: (id, ttlMs, partition) => recorded.remember(id, ttlMs, partition),
    };
    const guard = createCredentialGuard({ limit: 1, windowMs: 60_000, trustProxy: 'loopback' });
    const { server } = await startReplayServer(
      clients,
      { assertions: racing, dpop: new MemoryReplayStore() },
      { guard },
    );
    const ip = from();
    const assertion = await clientAssertion('key-client', clientKey);
    expect((await postToken(server, assertionForm(assertion), ip)).status).toBe(200);
    const replayed = await postToken(server, assertionForm(assertion), ip);
    expect({ status: replayed.status, error: errorOf(replayed) }).toEqual({
      status: 401,
      error: 'invalid_client',
    });
    // the budget of the address is spent: even a good request is 429 now
    const fresh = await postToken(
      server,
      assertionForm(await clientAssertion('key-client', clientKey)),
      ip,
    );
    expect({ status: fresh.status, error: errorOf(fresh) }).toEqual({
      status: 429,
      error: 'temporarily_unavailable',
    });
  });

  it('answers 429 when counting a refused grant spends the budget', async () => {
    // a store without peek: the guard cannot refuse before, only when it counts
    const guard = createCredentialGuard({
      limit: 1,
      windowMs: 60_000,
      store: { increment: () => ({ count: 2, resetAt: Date.now() + 30_000 }) },
    });
    const { server } = await startTokenServer({ guard });
    const reply = await madeUpCode(server, from());
    expect({
      status: reply.status,
      body: json(reply),
      retryAfter: Number(reply.headers['retry-after']) > 0,
    }).toEqual({
      status: 429,
      body: {
        error: 'temporarily_unavailable',
        error_description: 'Too many refused credentials from this address: try again later.',
      },
      retryAfter: true,
    });
  });

  it('answers 503 when the guard cannot count a refused grant', async () => {
    const guard = createCredentialGuard({
      limit: 1,
      windowMs: 60_000,
      store: {
        increment: () => {
          throw new Error('the rate-limit store is down');
        },
      },
    });
    const { server } = await startTokenServer({ guard });
    const reply = await madeUpCode(server, from());
    expect({ status: reply.status, error: errorOf(reply) }).toEqual({
      status: 503,
      error: 'temporarily_unavailable',
    });
  });
});
