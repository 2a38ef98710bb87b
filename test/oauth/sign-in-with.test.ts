// createAuthorizationServer({ signInWith }): the sign-in pages of /authorize and /device/verify
// link to the upstream providers, each link returning to the pending request (a pushed
// request's resolved parameters, never its used request_uri); labels escaped; none without it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSessions } from '../../src/auth/session/session.ts';
import { createRouter } from '../../src/http/routing/router.ts';
import { defineClient } from '../../src/oauth/clients/client.ts';
import { MemoryClientStore } from '../../src/oauth/clients/store.ts';
import { createOAuthContext } from '../../src/oauth/context.ts';
import { createAuthorizeEndpoint } from '../../src/oauth/endpoints/authorize.ts';
import { createDeviceVerificationEndpoint } from '../../src/oauth/endpoints/device-verify.ts';
import { createKeySet } from '../../src/oauth/tokens/key-set.ts';
import { closeAll, type Listening, request, serve } from '../helpers/http.ts';

const ISSUER = 'https://auth.example.test';
const asked: string[] = [];
let server: Listening;

const context = async (extra: Record<string, unknown>) =>
  createOAuthContext({
    issuer: ISSUER,
    keys: await createKeySet(),
    clients: new MemoryClientStore([
      await defineClient({
        clientId: 'web',
        secret: 'web-secret-0123456789',
        grantTypes: ['authorization_code'],
        redirectUris: ['https://app.example.test/cb'],
        scopes: ['openid', 'profile'],
      }),
    ]),
    users: { verify: () => undefined, get: () => undefined },
    sessions: createSessions({ allowedOrigins: [ISSUER] }),
    ...extra,
  });

beforeAll(async () => {
  const ctx = await context({
    signInWith: {
      links(returnTo: string) {
        asked.push(returnTo);
        return [
          { label: 'Acme <ID>', href: `/login/acme?returnTo=${encodeURIComponent(returnTo)}` },
          { label: 'GitHub', href: `/login/github?returnTo=${encodeURIComponent(returnTo)}` },
        ];
      },
    },
  });
  server = await serve(
    createRouter({
      '/authorize': createAuthorizeEndpoint(ctx),
      '/device/verify': createDeviceVerificationEndpoint(ctx),
    }),
  );
});
afterAll(closeAll);

const AUTHORIZE = `/authorize?${new URLSearchParams({
  response_type: 'code',
  client_id: 'web',
  redirect_uri: 'https://app.example.test/cb',
  scope: 'openid',
  state: 's1',
  code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
  code_challenge_method: 'S256',
})}`;

describe('signInWith', () => {
  it('links the /authorize sign-in page to each provider, back to the pending request', async () => {
    const reply = await request(server, AUTHORIZE);
    expect(reply.status).toBe(200);
    const back = asked.at(-1)!;
    const url = new URL(back, ISSUER);
    expect(url.pathname).toBe('/authorize');
    expect(Object.fromEntries(url.searchParams)).toMatchObject({
      client_id: 'web',
      state: 's1',
      code_challenge_method: 'S256',
    });
    expect(reply.body).toContain(
      `<li><a href="/login/acme?returnTo=${encodeURIComponent(back).replaceAll('&', '&amp;')}">Sign in with Acme &lt;ID&gt;</a></li>`,
    );
    expect(reply.body).toContain('>Sign in with GitHub</a>');
  });

  it('writes the links in the page language', async () => {
    const reply = await request(server, AUTHORIZE, { headers: { 'accept-language': 'fr' } });
    expect(reply.body).toContain('>Se connecter avec GitHub</a>');
  });

  it('links the /device/verify sign-in page, back to the code typed', async () => {
    const reply = await request(server, '/device/verify?user_code=WDJB-MJHT');
    expect(reply.status).toBe(200);
    expect(asked.at(-1)).toBe('/device/verify?user_code=WDJB-MJHT');
    expect(reply.body).toContain('>Sign in with Acme &lt;ID&gt;</a>');
  });

  it('shows no links without it, and refuses a signInWith without links()', async () => {
    const plain = await context({});
    const alone = await serve(createRouter({ '/authorize': createAuthorizeEndpoint(plain) }));
    const reply = await request(alone, AUTHORIZE);
    expect(reply.status).toBe(200);
    expect(reply.body).not.toContain('class="providers"');
    await expect(context({ signInWith: {} })).rejects.toThrow(
      'createAuthorizationServer(): `signInWith` must have a links(returnTo) method (createSignIn())',
    );
  });
});
