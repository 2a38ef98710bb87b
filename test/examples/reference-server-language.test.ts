// The reference server in English and French, from outside: its console at `/` by
// Accept-Language, its authorization pages by ui_locales (then Accept-Language).
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningServer, startReferenceServer } from './spawn-server.js';

let server: RunningServer;

beforeAll(async () => {
  server = await startReferenceServer();
});

afterAll(async () => {
  await server?.stop();
});

const get = (path: string, language?: string) =>
  fetch(`${server.url}${path}`, {
    redirect: 'manual',
    headers: language === undefined ? {} : { 'Accept-Language': language },
  });

/** An authorization request of the confidential demo-web client, with PKCE S256. */
function authorizePath(extra: Record<string, string> = {}): string {
  const verifier = randomBytes(32).toString('base64url');
  return `/authorize?${new URLSearchParams({
    response_type: 'code',
    client_id: 'demo-web',
    redirect_uri: 'http://127.0.0.1:8080/callback',
    scope: 'openid profile',
    state: randomBytes(8).toString('hex'),
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    ...extra,
  })}`;
}

function expectLanguage(reply: Response, language: string) {
  expect(reply.headers.get('content-language')).toBe(language);
  expect(reply.headers.get('vary') ?? '').toMatch(/\bAccept-Language\b/i);
}

describe('the reference server in English and French', () => {
  it('serves the console in English by default', async () => {
    const page = await get('/');
    expect(page.status).toBe(200);
    expectLanguage(page, 'en');
    const html = await page.text();
    expect(html).toContain('<html lang="en">');
    expect(html).toContain('<h1>portico reference server</h1>');
    expect(html).toContain('src="/console.js"');
  });

  it('serves the console in French by Accept-Language, with the same scripts', async () => {
    for (const language of ['fr-CA,fr;q=0.9,en;q=0.5', 'fr', 'de, fr;q=0.3']) {
      const page = await get('/', language);
      expect(page.status).toBe(200);
      expectLanguage(page, 'fr');
      expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
      const html = await page.text();
      expect(html).toContain('<html lang="fr">');
      expect(html).toContain('<h1>Serveur de référence portico</h1>');
      expect(html).toContain('src="/console.js"');
    }
    expectLanguage(await get('/', 'fr;q=0, en;q=0.1'), 'en');
  });

  it('answers /authorize with ui_locales=fr in French, over an English Accept-Language', async () => {
    const page = await get(authorizePath({ ui_locales: 'fr' }), 'en-US,en;q=0.9');
    expect(page.status).toBe(200);
    expectLanguage(page, 'fr');
    const html = await page.text();
    expect(html).toContain('<html lang="fr">');
    expect(html).toContain('<h1>Connexion</h1>');
    expect(html).toContain('name="ui_locales" value="fr"');
    const english = await get(authorizePath());
    expectLanguage(english, 'en');
    expect(await english.text()).toContain('<h1>Sign in</h1>');
  });

  it('answers the error page of an unknown client in the language asked for', async () => {
    const page = await get('/authorize?client_id=nobody&ui_locales=fr-CA');
    expect(page.status).toBe(400);
    expectLanguage(page, 'fr');
    expect(await page.text()).toContain('L’application qui vous a envoyé ici est inconnue.');
  });
});
