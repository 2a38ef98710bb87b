// createSignIn({ tokens }) against panva's oidc-provider: the provider's tokens kept sealed
// beside the session, the access token refreshed before it expires with one refresh for 50
// concurrent calls, the refresh token revoked at sign-out, and no token in any cookie.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toNodeListener } from '../../src/adapters/node-listener.ts';
import { createSessions } from '../../src/auth/session/session.ts';
import { upstreamProvider } from '../../src/client/provider.ts';
import { createSignIn, type SignIn } from '../../src/client/sign-in.ts';
import { sendJson } from '../../src/core/send.ts';
import { createRouter } from '../../src/http/routing/router.ts';
import { MemoryRecordStore, type RecordStore } from '../../src/oauth/store/store.ts';
import { closeAll, type Listening, listen } from '../helpers/http.ts';
import { Browser, signInUpstream, startUpstream, type Upstream } from '../helpers/upstream.ts';

let app: Listening;
let upstream: Upstream;
let signIn: SignIn;
const memory = new MemoryRecordStore();
/** Every record written, as JSON: what a Redis in its place would hold. */
const written: string[] = [];
const store: RecordStore = {
  save: (kind, id, record, ttl, keys) => {
    written.push(JSON.stringify(record));
    return memory.save(kind, id, record, ttl, keys);
  },
  replace: (kind, id, record, when) => {
    written.push(JSON.stringify(record));
    return memory.replace(kind, id, record, when);
  },
  find: (kind, id) => memory.find(kind, id),
  findByKey: (kind, key) => memory.findByKey(kind, key),
  list: (kind, group) => memory.list(kind, group),
  consume: (kind, id) => memory.consume(kind, id),
  destroy: (kind, id, when) => memory.destroy(kind, id, when),
  revokeGrant: (grantId, ttl) => memory.revokeGrant(grantId, ttl),
  isGrantRevoked: (grantId) => memory.isGrantRevoked(grantId),
};

beforeAll(async () => {
  let handler: (req: never, res: never) => void = () => {};
  app = await listen((req, res) => handler(req as never, res as never));
  upstream = await startUpstream(
    [
      {
        client_id: 'api-caller',
        client_secret: 'api-caller-secret',
        redirect_uris: [`${app.url}/login/upstream/callback`],
        grant_types: ['authorization_code', 'refresh_token'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    { accessTokenTtl: 60 },
  );
  const sessions = createSessions({ allowedOrigins: [app.url], cookie: { secure: false } });
  signIn = createSignIn({
    baseUrl: app.url,
    secret: 'user-tokens-secret-0123456789abcdefghij',
    sessions,
    cookie: { secure: false },
    // the provider's access tokens live 60 s, replaced in their last 55: a refreshed token stays
    // fresh for 5 s, time enough for the 50 requests even on a loaded machine
    tokens: { store, refreshBefore: 55_000 },
    providers: [
      upstreamProvider({
        name: 'upstream',
        issuer: upstream.issuer,
        clientId: 'api-caller',
        clientSecret: 'api-caller-secret',
        scope: 'openid offline_access',
        authorizationParams: { prompt: 'consent' },
      }),
    ],
    toUser: ({ claims }) => ({ sub: claims.sub, scopes: [] }),
  });
  const router = createRouter({
    ...signIn.routes,
    '/token': {
      GET: async (req, res) => sendJson(res, 200, { token: await signIn.accessToken(req) }),
    },
    '/logout': {
      async POST(req, res) {
        await signIn.signOut(req, res);
        res.end();
      },
    },
  });
  handler = toNodeListener([router]) as never;
});
afterAll(async () => {
  await closeAll();
  await upstream.close();
});

describe('createSignIn({ tokens }): tokens on the user’s behalf', () => {
  it('refreshes once for 50 concurrent calls, keeps tokens out of cookies, revokes at sign-out', async () => {
    const browser = new Browser();
    const back = await signInUpstream(browser, `${app.url}/login/upstream`, upstream);
    const done = await browser.fetch(back);
    expect(done.status).toBe(303);
    // the cookies hold a session id and nothing of the provider's tokens
    for (const line of done.headers.getSetCookie()) expect(line.length).toBeLessThan(200);
    const first = (await (await browser.fetch(`${app.url}/token`)).json()) as { token: string };
    const before = upstream.hits.get('/token') ?? 0;
    await new Promise((resolve) => setTimeout(resolve, 5_100)); // into the refresh window
    const replies = await Promise.all(
      Array.from({ length: 50 }, () => browser.fetch(`${app.url}/token`)),
    );
    const tokens = await Promise.all(
      replies.map(async (r) => ((await r.json()) as { token: string }).token),
    );
    expect(replies.every((r) => r.status === 200)).toBe(true);
    expect(upstream.hits.get('/token')! - before).toBe(1);
    expect(new Set(tokens).size).toBe(1);
    expect(tokens[0]).not.toBe(first.token);
    // what the store keeps is sealed: no token reads in it
    expect(written).toHaveLength(2); // kept at sign-in, replaced by the one refresh
    for (const record of written) {
      expect(record).toMatch(/^\{"sealed":"eyJ[\w.-]+","version":[01]\}$/);
      expect(record).not.toContain(tokens[0]);
      expect(record).not.toContain(first.token);
    }
    const revocations = upstream.hits.get('/token/revocation') ?? 0;
    const out = await browser.fetch(`${app.url}/logout`, {
      method: 'POST',
      headers: { origin: app.url },
    });
    expect(out.status).toBe(200);
    expect(upstream.hits.get('/token/revocation')).toBe(revocations + 1);
    const after = await browser.fetch(`${app.url}/token`);
    expect(after.status).toBe(401);
  }, 30_000);

  it('answers 401 for a session without upstream tokens', async () => {
    const res = await fetch(`${app.url}/token`);
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ detail: 'Sign in at a provider first.' });
  });
});
