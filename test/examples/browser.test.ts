// The SPA example and the reference server's console in a real Chromium: the PKCE sign-in
// through the real forms, CORS on /token and /api/*, the session cookie carried by
// EventSource and WebSocket, and a page from an origin outside CORS_ORIGINS kept out.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, Page, Response } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSpa } from '../../examples/spa/server.js';
import { hasChromium, launchChromium, SCREENSHOTS } from '../helpers/chromium.js';
import { type RunningServer, startReferenceServer } from './spawn-server.js';

const SPA_ORIGIN = 'http://127.0.0.1:5173'; // a redirect URI of `demo-spa` is on this origin
const WAIT_MS = 10_000;

function listenOn(server: Server, port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    server.once('error', (err) =>
      reject(new Error(`cannot listen on 127.0.0.1:${port} (${(err as Error).message})`)),
    );
    server.listen(port, '127.0.0.1', () => {
      resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    });
  });
}

/** A page that fails the test on any script error or CSP violation it reports. */
async function openPage(context: BrowserContext, problems: string[]): Promise<Page> {
  const page = await context.newPage();
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('console', (message) => {
    const { url } = message.location();
    // the browser asks each origin for /favicon.ico on its own; the sign-in pages have none
    if (message.type() === 'error' && !url.endsWith('/favicon.ico')) {
      problems.push(`console: ${message.text()} (${url})`);
    }
  });
  return page;
}

describe.skipIf(!hasChromium)('in Chromium', () => {
  let api: RunningServer;
  let spa: ReturnType<typeof createSpa>;
  let stranger: ReturnType<typeof createSpa>;
  let strangerOrigin: string;
  let browser: Browser;
  let context: BrowserContext;
  const problems: string[] = [];

  beforeAll(async () => {
    api = await startReferenceServer();
    spa = createSpa({ api: api.url });
    await listenOn(spa.server, 5173);
    // the same app on another port: an origin the service does not allow
    stranger = createSpa({ api: api.url });
    strangerOrigin = await listenOn(stranger.server, 0);
    browser = await launchChromium();
    context = await browser.newContext();
  }, 30_000);

  afterAll(async () => {
    await browser?.close();
    await Promise.all([spa?.close(), stranger?.close(), api?.stop()]);
  });

  /** Waits for both live feeds of a page to be open. */
  async function feedsOpen(page: Page): Promise<void> {
    await expect.poll(() => page.textContent('#sse-state'), { timeout: WAIT_MS }).toBe('open');
    await expect.poll(() => page.textContent('#ws-state'), { timeout: WAIT_MS }).toBe('open');
  }

  /** Posts `text` through the page's form and waits for it over SSE and over the WebSocket. */
  async function postAndWatch(page: Page, text: string, from = 'alice'): Promise<void> {
    await page.fill('#post-form input[name="text"]', text);
    await page.click('#post-form button[type="submit"]');
    for (const via of ['sse', 'ws']) {
      await expect
        .poll(() => page.locator(`#${via}-messages li`).allTextContents(), { timeout: WAIT_MS })
        .toContain(`${from}: ${text}`);
    }
  }

  it('signs in to the SPA with PKCE through the real sign-in and consent forms', async () => {
    const page = await openPage(context, problems);
    const corsAnswers: Response[] = [];
    page.on('response', (response) => {
      if (response.request().method() !== 'OPTIONS' && response.url().startsWith(api.url)) {
        corsAnswers.push(response);
      }
    });
    await page.goto(`${SPA_ORIGIN}/`);
    await page.click('#sign-in');
    await page.waitForURL(/\/authorize\?/, { timeout: WAIT_MS });
    expect(page.url().startsWith(`${api.url}/authorize?`)).toBe(true);
    const authorize = new URL(page.url()).searchParams;
    expect(authorize.get('code_challenge_method')).toBe('S256');
    expect(authorize.get('redirect_uri')).toBe(`${SPA_ORIGIN}/callback`);

    await page.fill('input[name="username"]', 'alice');
    await page.fill('input[name="password"]', 'alice-password');
    await page.click('form [type="submit"]');
    await page.waitForSelector('button[name="decision"][value="approve"]', { timeout: WAIT_MS });
    await page.screenshot({ path: `${SCREENSHOTS}consent.png` });
    await page.click('button[name="decision"][value="approve"]');

    await expect
      .poll(() => page.textContent('#who'), { timeout: WAIT_MS })
      .toBe('Alice Example (alice)');
    expect(page.url()).toBe(`${SPA_ORIGIN}/`); // the code left the address bar
    expect(await page.textContent('#scopes')).toContain('write:messages');

    // the SPA read the token and API answers cross-origin: CORS allowed exactly its origin
    const token = corsAnswers.find((r) => new URL(r.url()).pathname === '/token');
    const me = corsAnswers.find((r) => new URL(r.url()).pathname === '/api/me');
    for (const answer of [token, me]) {
      expect(answer?.status()).toBe(200);
      expect(await answer!.headerValue('access-control-allow-origin')).toBe(SPA_ORIGIN);
    }
    expect(await token!.headerValue('cache-control')).toBe('no-store');

    // the sign-in page left the service's session cookie: HttpOnly, SameSite=Strict
    const cookies = await context.cookies(api.url);
    const session = cookies.find((c) => c.name === 'session');
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/' });
    expect(await page.evaluate('document.cookie')).not.toContain('session=');
    await page.screenshot({ path: `${SCREENSHOTS}spa-signed-in.png` });
    await page.close();
  }, 40_000);

  it('shows a message it posts arriving over SSE and WebSocket, both authenticated by the cookie', async () => {
    const page = await openPage(context, problems); // the tokens live in the tab: sign in anew
    await page.goto(`${SPA_ORIGIN}/`);
    await page.click('#sign-in');
    // signed in and consented already: straight back to the app, no page shown
    await expect.poll(() => page.textContent('#who'), { timeout: WAIT_MS }).toContain('alice');
    await feedsOpen(page);

    const posted = page.waitForResponse(
      (r) => r.url() === `${api.url}/api/messages` && r.request().method() === 'POST',
    );
    await postAndWatch(page, 'hello from Chromium');
    const answer = await posted;
    expect(answer.status()).toBe(201);
    expect(await answer.headerValue('access-control-allow-origin')).toBe(SPA_ORIGIN);
    const frames = await page.locator('#frames li').allTextContents();
    expect(frames.some((f) => f.startsWith('ws ← {"type":"welcome"'))).toBe(true);
    expect(frames.some((f) => f.startsWith('sse ← id: '))).toBe(true);
    await page.screenshot({ path: `${SCREENSHOTS}spa-live.png`, fullPage: true });

    // signing out ends the server's session: a new page can no longer open the feeds
    await page.click('#sign-out');
    await page.waitForSelector('#sign-in', { state: 'visible', timeout: WAIT_MS });
    expect(
      (await context.cookies(api.url)).find((c) => c.name === 'session' && c.value !== ''),
    ).toBeUndefined();
    await page.close();
  }, 40_000);

  it('keeps out a page from an origin outside CORS_ORIGINS', async () => {
    const page = await context.newPage();
    await page.goto(`${strangerOrigin}/`);
    const outcome = await page.evaluate(async (service) => {
      const fetched = await fetch(`${service}/.well-known/openid-configuration`).then(
        () => 'read',
        () => 'blocked',
      );
      const posted = await fetch(`${service}/token`, {
        method: 'POST',
        body: new URLSearchParams({ grant_type: 'client_credentials' }),
      }).then(
        () => 'read',
        () => 'blocked',
      );
      const socket = await new Promise<string>((resolve) => {
        const ws = new WebSocket(`${service.replace('http', 'ws')}/ws`);
        ws.onopen = () => resolve('open');
        ws.onclose = (event) => resolve(`closed ${event.code}`);
      });
      const stream = await new Promise<string>((resolve) => {
        const events = new EventSource(`${service}/events`, { withCredentials: true });
        events.onopen = () => resolve('open');
        events.onerror = () =>
          resolve(events.readyState === EventSource.CLOSED ? 'failed' : 'retry');
      });
      return { fetched, posted, socket, stream };
    }, api.url);
    expect(outcome).toEqual({
      fetched: 'blocked',
      posted: 'blocked',
      socket: 'closed 1006', // the handshake got 403: the page only learns "abnormal closure"
      stream: 'failed',
    });
    expect(await page.textContent('#error')).toMatch(/fetch/i); // the SPA itself could not start
    await page.close();
  });

  it('serves a console at / for a signed-in session', async () => {
    const fresh = await browser.newContext();
    try {
      const page = await openPage(fresh, problems);
      await page.goto(`${api.url}/`);
      await page.waitForSelector('#sign-in-form', { state: 'visible', timeout: WAIT_MS });
      await page.fill('input[name="username"]', 'bob');
      await page.fill('input[name="password"]', 'wrong');
      await page.click('#sign-in-form button');
      await expect
        .poll(() => page.textContent('#sign-in-error'), { timeout: WAIT_MS })
        .toMatch(/^401 /);
      await page.fill('input[name="password"]', 'bob-password');
      await page.click('#sign-in-form button');
      await expect
        .poll(() => page.textContent('#who'), { timeout: WAIT_MS })
        .toBe('Bob Example (bob)');
      await feedsOpen(page);
      await postAndWatch(page, 'hello from the console', 'bob');
      await page.screenshot({ path: `${SCREENSHOTS}console.png`, fullPage: true });
    } finally {
      await fresh.close();
    }
  }, 40_000);

  it('ran every page without a script error or a CSP violation', () => {
    // the 401 of the wrong password is the one error a page may log
    expect(problems.filter((p) => !/status of 401/.test(p))).toEqual([]);
  });
});
