// examples/sign-in on node:http and on Express, against panva's oidc-provider: the sign-in
// link, the code flow into a session, /me, and sign-out continuing at the provider; and the
// development provider the examples start without OIDC_ISSUER.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { createApp as createExpressApp } from '../../examples/sign-in/express.js';
import { createApp as createNodeApp } from '../../examples/sign-in/server.js';
import { settingsFromEnv } from '../../examples/sign-in/settings.js';
import { Browser, signInUpstream, startUpstream, type Upstream } from '../helpers/upstream.js';

const SECRET = 'sign-in-example-secret-0123456789abcdef';
const closers: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close();
});

/** A port free now on 127.0.0.1: the app's redirect URI must be known before it listens. */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** `app` listening on `port` until the file ends. */
async function listenOn(app: Server, port: number): Promise<void> {
  await new Promise<void>((resolve) => app.listen(port, '127.0.0.1', resolve));
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        app.closeAllConnections();
        app.close(() => resolve());
      }),
  );
}

/** Signs in at `base` through `upstream`, then checks /me and the sign-out. */
async function walk(base: string, upstream: Upstream | { issuer: string }, login: string) {
  const browser = new Browser();
  const home = await (await browser.fetch(`${base}/`)).text();
  expect(home).toContain('href="/login/oidc?returnTo=%2Fme"');
  const back = await signInUpstream(
    browser,
    `${base}/login/oidc?returnTo=%2Fme`,
    upstream as Upstream,
    login,
  );
  const landed = await browser.fetch(back);
  expect(landed.status).toBe(303);
  expect(landed.headers.get('location')).toBe('/me');
  const me = await browser.fetch(`${base}/me`);
  expect(await me.json()).toMatchObject({ sub: `oidc:${login}` });
  const out = await browser.fetch(`${base}/logout`, { method: 'POST', headers: { origin: base } });
  const body = (await out.json()) as { signedOut: boolean; continueAt?: string };
  expect(body.signedOut).toBe(true);
  expect(new URL(body.continueAt!).origin).toBe(upstream.issuer);
  expect((await browser.fetch(`${base}/me`)).status).toBe(401);
}

for (const [name, createApp] of [
  ['node:http', createNodeApp],
  ['Express', createExpressApp],
] as const) {
  describe(`examples/sign-in on ${name}`, () => {
    it('signs in at the provider, shows /me, signs out there too', async () => {
      const upstream = await startUpstream();
      closers.push(() => upstream.close());
      // the app's port first: the provider registers its redirect URI
      const port = await freePort();
      const base = `http://127.0.0.1:${port}`;
      upstream.configure([
        {
          client_id: 'example',
          client_secret: 'example-secret',
          redirect_uris: [`${base}/login/oidc/callback`],
          post_logout_redirect_uris: [`${base}/`],
          grant_types: ['authorization_code', 'refresh_token'],
        },
      ]);
      const settings = {
        issuer: upstream.issuer,
        clientId: 'example',
        clientSecret: 'example-secret',
      };
      await listenOn(createApp({ ...settings, baseUrl: base, secret: SECRET }), port);
      await walk(base, upstream, 'alice');
    }, 30_000);
  });
}

describe('examples/sign-in without OIDC_ISSUER', () => {
  it('starts a development provider where any username signs in (its consent page too)', async () => {
    const port = await freePort();
    const settings = await settingsFromEnv({ PORT: String(port) });
    closers.push(settings.close);
    expect(settings.issuer).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    await listenOn(createNodeApp(settings), port);
    await walk(settings.baseUrl, { issuer: settings.issuer }, 'zoe');
  }, 30_000);
});
