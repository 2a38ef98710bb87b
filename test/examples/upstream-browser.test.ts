// The reference server's upstream sign-in in a real Chromium: the console's "Sign in with …"
// link, oidc-provider's own sign-in form at another site (`localhost` is another site than
// `127.0.0.1`), and back: the SameSite=Strict session cookie must reach the console although
// the browser arrived from the provider's site; then the sign-out continues at the provider.
import type { Browser, BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasChromium, launchChromium } from '../helpers/chromium.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';
import { type RunningServer, startReferenceServer } from './spawn-server.js';

const WAIT_MS = 10_000;

describe.skipIf(!hasChromium)('in Chromium: signing in at an upstream provider', () => {
  let upstream: Upstream;
  let server: RunningServer;
  let browser: Browser;
  let context: BrowserContext;

  beforeAll(async () => {
    upstream = await startUpstream();
    // the provider at another site than the service: localhost, not 127.0.0.1
    const issuer = upstream.issuer.replace('127.0.0.1', 'localhost');
    server = await startReferenceServer(
      {
        UPSTREAM_ISSUER: issuer,
        UPSTREAM_CLIENT_ID: 'console',
        UPSTREAM_CLIENT_SECRET: 'console-secret',
        UPSTREAM_NAME: 'Acme ID',
      },
      30_000,
    );
    upstream.issuer = issuer;
    upstream.configure([
      {
        client_id: 'console',
        client_secret: 'console-secret',
        redirect_uris: [`${server.url}/login/upstream/callback`],
        post_logout_redirect_uris: [`${server.url}/`],
        grant_types: ['authorization_code'],
      },
    ]);
    browser = await launchChromium();
    context = await browser.newContext();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    await upstream?.close();
  });

  it('signs in from the console at the provider and comes back signed in', async () => {
    const page = await context.newPage();
    await page.goto(`${server.url}/`);
    await page.click('text=Sign in with Acme ID');
    await page.waitForURL(/localhost:\d+\/interaction\//, { timeout: WAIT_MS });
    await page.fill('input[name="login"]', 'frank');
    await page.fill('input[name="password"]', 'any');
    await page.click('button[type="submit"]');
    // consent is remembered at this provider: straight back to the service
    await expect
      .poll(() => page.textContent('#who'), { timeout: WAIT_MS })
      .toMatch(/^Frank Upstream \(frank@localhost:\d+\)$/);
    expect(page.url()).toBe(`${server.url}/`);
    const cookies = await context.cookies(server.url);
    expect(cookies.find((c) => c.name === 'session')).toMatchObject({ sameSite: 'Strict' });
    expect(cookies.find((c) => c.name === '__Host-portico-sign-in')).toBeUndefined();

    await page.click('#sign-out');
    await page.waitForURL(/localhost:\d+\/session\/end/, { timeout: WAIT_MS });
    const after = await context.cookies(server.url);
    expect(after.find((c) => c.name === 'session')).toBeUndefined();
  }, 30_000);
});
