// createSignIn() against a provider that lies: ID tokens of another audience, nonce, issuer or
// key, expired ones, a token endpoint that never answers, answers garbage or fails; and a plain
// OAuth 2.0 provider shaped like GitHub (no ID token: the profile fetch says who signed in).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toNodeListener } from '../../src/adapters/node-listener.ts';
import { createSessions } from '../../src/auth/session/session.ts';
import { upstreamProvider } from '../../src/client/provider.ts';
import { createSignIn } from '../../src/client/sign-in.ts';
import { createRouter } from '../../src/http/routing/router.ts';
import { closeAll, type Listening, listen } from '../helpers/http.ts';
import { type StandIn, startStandIn, type TokenAnswer } from '../helpers/stand-in-provider.ts';
import { Browser } from '../helpers/upstream.ts';

let app: Listening;
let oidc: StandIn;
let github: StandIn;
const users: unknown[] = [];

beforeAll(async () => {
  oidc = await startStandIn('oidc');
  github = await startStandIn('github');
  const sessions = createSessions({
    allowedOrigins: ['http://127.0.0.1'],
    cookie: { secure: false },
  });
  let handler: (req: never, res: never) => void = () => {};
  app = await listen((req, res) => handler(req as never, res as never));
  const signIn = createSignIn({
    baseUrl: app.url,
    secret: 'hostile-sign-in-secret-0123456789abcdef',
    sessions,
    cookie: { secure: false },
    providers: [
      upstreamProvider({
        name: 'liar',
        issuer: oidc.url,
        clientId: 'app',
        clientSecret: 'app-secret',
        timeout: 1_000,
      }),
      upstreamProvider({
        name: 'github',
        label: 'GitHub',
        authorizationEndpoint: `${github.url}/authorize`,
        tokenEndpoint: `${github.url}/token`,
        clientId: 'gh-app',
        clientSecret: 'gh-secret',
        clientAuth: 'client_secret_post',
        scope: 'read:user',
        async profile(accessToken, fetch) {
          const res = await fetch(`${github.url}/user`, {
            headers: { authorization: `Bearer ${accessToken}` },
          });
          const user = (await res.json()) as { id: number; login: string; name: string };
          return res.ok ? { sub: String(user.id), name: user.name, login: user.login } : undefined;
        },
      }),
    ],
    toUser: ({ provider, claims }) => {
      users.push(claims);
      return { sub: `${claims.sub}@${provider.name}`, scopes: [] };
    },
  });
  handler = toNodeListener([createRouter(signIn.routes)]) as never;
});
afterAll(async () => {
  await closeAll();
  await oidc.close();
  await github.close();
});

/** A sign-in at `name` in a new browser, the token endpoint answering `answer`: the callback's reply. */
async function callbackWith(name: string, answer: TokenAnswer = 'good') {
  const stand = name === 'github' ? github : oidc;
  stand.answer = answer;
  const browser = new Browser();
  const start = await browser.fetch(`${app.url}/login/${name}`);
  expect(start.status).toBe(303);
  const authorized = await browser.fetch(start.headers.get('location')!);
  const res = await browser.fetch(authorized.headers.get('location')!);
  return { res, sessionSet: res.headers.getSetCookie().some((c) => c.startsWith('session=')) };
}

describe('createSignIn(): a provider whose answers do not verify', () => {
  it('accepts a good answer, with the client secret sent as client_secret_basic', async () => {
    const { res, sessionSet } = await callbackWith('liar');
    expect(res.status).toBe(303);
    expect(sessionSet).toBe(true);
    const request = oidc.tokenRequests.at(-1)!;
    // RFC 6749 §2.3.1: id and secret form-encoded before base64 (`-` as %2D)
    expect(request.authorization).toBe(
      `Basic ${Buffer.from('app:app%2Dsecret').toString('base64')}`,
    );
    expect(request.body.get('code_verifier')).toMatch(/^[\w-]{43}$/);
    expect(request.body.get('redirect_uri')).toBe(`${app.url}/login/liar/callback`);
  });

  for (const answer of [
    'other-audience',
    'other-nonce',
    'other-issuer',
    'bad-signature',
    'expired',
  ] as const) {
    it(`refuses an ID token of ${answer} with a 400 and no session`, async () => {
      const { res, sessionSet } = await callbackWith('liar', answer);
      expect(res.status).toBe(400);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(await res.json()).toMatchObject({
        detail: 'The answer of liar does not verify. Start again.',
      });
      expect(sessionSet).toBe(false);
    });
  }

  for (const answer of ['slow', 'garbage', 'server-error'] as const) {
    it(`answers a token endpoint that is ${answer} with a 502 and no session`, async () => {
      const { res, sessionSet } = await callbackWith('liar', answer);
      expect(res.status).toBe(502);
      expect(sessionSet).toBe(false);
    });
  }
});

describe('createSignIn(): a plain OAuth 2.0 provider (GitHub-shaped)', () => {
  it('signs in from the profile, without nonce or ID token, the secret in the form', async () => {
    const { res, sessionSet } = await callbackWith('github');
    expect(res.status).toBe(303);
    expect(sessionSet).toBe(true);
    expect(users.at(-1)).toEqual({ sub: '4242', name: 'Octo Cat', login: 'octo' });
    const request = github.tokenRequests.at(-1)!;
    expect(request.body.get('client_secret')).toBe('gh-secret');
    expect(request.authorization).toBeUndefined();
  });

  it('sends no nonce to it', async () => {
    const res = await new Browser().fetch(`${app.url}/login/github`);
    const to = new URL(res.headers.get('location')!);
    expect(to.searchParams.has('nonce')).toBe(false);
    expect(to.searchParams.get('scope')).toBe('read:user');
    expect(to.searchParams.get('code_challenge_method')).toBe('S256');
  });
});
