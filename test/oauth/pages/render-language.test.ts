// The authorization server's pages in English and French: OpenID Connect's ui_locales first,
// then Accept-Language, else English; Content-Language, Vary and <html lang> agree.
import type { RequestListener } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toNodeListener } from '../../../src/adapters/node.js';
import { createCredentialGuard } from '../../../src/auth/credential-guard.js';
import { createSessions } from '../../../src/auth/session/session.js';
import { createRouter } from '../../../src/http/routing/router.js';
import { defineClient } from '../../../src/oauth/clients/client.js';
import { MemoryClientStore } from '../../../src/oauth/clients/store.js';
import { localizeMessage, pageMessages } from '../../../src/oauth/pages/messages.js';
import { defaultPages, type ErrorPageData } from '../../../src/oauth/pages/render.js';
import { createAuthorizationServer } from '../../../src/oauth/server.js';
import { createKeySet } from '../../../src/oauth/tokens/key-set.js';
import { hiddenInputs, sessionCookie } from '../../helpers/browser.js';
import { closeAll, type Listening, listen, type Reply, request } from '../../helpers/http.js';
import { pkce } from '../token-fixtures.js';

const WEB = 'https://app.example.com/cb';
const CANADA = 'fr-CA,fr;q=0.9,en;q=0.5';
const FORM = { 'Content-Type': 'application/x-www-form-urlencoded' };

let app: Listening;
const errorData: ErrorPageData[] = [];

async function start(limit = 100, custom = false): Promise<Listening> {
  let listener: RequestListener = (_req, res) => res.end();
  const listening = await listen((req, res) => listener(req, res));
  const server = createAuthorizationServer({
    issuer: listening.url,
    clients: new MemoryClientStore([
      await defineClient({
        clientId: 'web',
        name: 'Photos',
        secret: 'web-secret-123',
        grantTypes: ['authorization_code'],
        redirectUris: [WEB],
        scopes: ['openid', 'profile'],
      }),
      await defineClient({
        clientId: 'tv',
        name: 'Salon TV',
        grantTypes: ['urn:ietf:params:oauth:grant-type:device_code'],
        redirectUris: [],
        scopes: ['openid'],
      }),
    ]),
    keys: await createKeySet(),
    users: {
      verify: (username, password) =>
        username === 'alice' && password === 'alice-password' ? { sub: 'alice' } : undefined,
      get: (sub) => ({ sub }),
    },
    sessions: createSessions({ allowedOrigins: [listening.url], cookie: { secure: false } }),
    guard: createCredentialGuard({ limit, windowMs: 60_000 }),
    ...(custom && {
      pages: {
        error: (data: ErrorPageData) => {
          errorData.push(data);
          return defaultPages.error(data);
        },
      },
    }),
  });
  listener = toNodeListener([createRouter(server.routes)]);
  return listening;
}

beforeAll(async () => {
  app = await start();
});
afterAll(closeAll);

const authorizePath = (extra: Record<string, string> = {}) =>
  `/authorize?${new URLSearchParams({
    response_type: 'code',
    client_id: 'web',
    redirect_uri: WEB,
    state: 's',
    code_challenge: pkce().challenge,
    code_challenge_method: 'S256',
    ...extra,
  })}`;

const get = (path: string, language?: string, cookie?: string, on = app) =>
  request(on, path, {
    headers: {
      ...(language === undefined ? {} : { 'Accept-Language': language }),
      ...(cookie === undefined ? {} : { Cookie: cookie }),
    },
  });

const post = (path: string, fields: [string, string][], cookie?: string, on = app) =>
  request(on, path, {
    method: 'POST',
    headers: { ...FORM, ...(cookie === undefined ? {} : { Cookie: cookie }) },
    body: new URLSearchParams(fields).toString(),
  });

/** The page is in `language`: its header, its Vary and its `<html lang>`. */
function expectLanguage(reply: Reply, language: 'en' | 'fr') {
  expect(reply.headers['content-language']).toBe(language);
  expect(String(reply.headers.vary)).toMatch(/\bAccept-Language\b/);
  expect(reply.body).toContain(`<html lang="${language}">`);
  expect(reply.headers['content-type']).toBe('text/html; charset=utf-8');
}

const signInFields = (page: Reply, password = 'alice-password'): [string, string][] => [
  ...hiddenInputs(page.body),
  ['username', 'alice'],
  ['password', password],
];

describe('/authorize pages', () => {
  it('are in English by default, keeping the English wording', async () => {
    const page = await get(authorizePath());
    expect(page.status).toBe(200);
    expectLanguage(page, 'en');
    expect(page.body).toContain('<h1>Sign in</h1>');
    expect(page.body).toContain('to continue to <strong>Photos</strong>');
  });

  for (const [how, path, language] of [
    ['ui_locales', authorizePath({ ui_locales: 'fr' }), undefined],
    ['ui_locales with a region', authorizePath({ ui_locales: 'de fr-CA en' }), undefined],
    ['Accept-Language', authorizePath(), CANADA],
  ] as const) {
    it(`are in French by ${how}: sign-in, wrong password, consent`, async () => {
      const page = await get(path, language);
      expectLanguage(page, 'fr');
      expect(page.body).toContain('<h1>Connexion</h1>');
      expect(page.body).toContain('pour continuer vers <strong>Photos</strong>');
      expect(page.body).toContain('<button type="submit">Se connecter</button>');
      const wrong = await request(app, '/authorize', {
        method: 'POST',
        headers: { ...FORM, ...(language === undefined ? {} : { 'Accept-Language': language }) },
        body: new URLSearchParams(signInFields(page, 'nope')).toString(),
      });
      expect(wrong.status).toBe(401);
      expectLanguage(wrong, 'fr');
      expect(wrong.body).toContain('Le nom d’utilisateur ou le mot de passe est incorrect.');
      const consent = await request(app, '/authorize', {
        method: 'POST',
        headers: { ...FORM, ...(language === undefined ? {} : { 'Accept-Language': language }) },
        body: new URLSearchParams(signInFields(wrong)).toString(),
      });
      expect(consent.status).toBe(200);
      expectLanguage(consent, 'fr');
      expect(consent.body).toContain(
        '<h1>Autoriser <strong>Photos</strong> à utiliser votre compte\u00a0?</h1>',
      );
      expect(consent.body).toContain('Confirmer votre identité (<code>openid</code>)');
      expect(consent.body).toContain('value="approve">Autoriser</button>');
      expect(consent.body).toContain('value="deny">Refuser</button>');
    });
  }

  it('carries ui_locales (and claims_locales) in the sealed hidden inputs', async () => {
    const page = await get(authorizePath({ ui_locales: 'fr', claims_locales: 'fr-CA' }));
    expect(page.status).toBe(200);
    const hidden = hiddenInputs(page.body);
    expect(hidden).toContainEqual(['ui_locales', 'fr']);
    expect(hidden).toContainEqual(['claims_locales', 'fr-CA']);
    // a changed language voids the form, like any changed parameter
    const changed = hidden.map(([n, v]): [string, string] => [n, n === 'ui_locales' ? 'en' : v]);
    const tampered = await post('/authorize', [...changed, ['username', 'a'], ['password', 'b']]);
    expect(tampered.status).toBe(400);
    expectLanguage(tampered, 'en');
    expect(tampered.body).toContain('This form has expired or was changed.');
  });

  it('lets ui_locales win over Accept-Language, and falls back when it names none we have', async () => {
    expectLanguage(await get(authorizePath({ ui_locales: 'en' }), CANADA), 'en');
    expectLanguage(await get(authorizePath({ ui_locales: 'fr' }), 'en'), 'fr');
    expectLanguage(await get(authorizePath({ ui_locales: 'de ja' }), CANADA), 'fr');
    expectLanguage(await get(authorizePath({ ui_locales: 'de ja' }), 'de'), 'en');
    expectLanguage(await get(authorizePath(), 'fr;q=0, en;q=0.1'), 'en');
  });

  it('answers the error pages in French: unknown client, expired form, repeated ui_locales', async () => {
    const unknown = await get('/authorize?client_id=nobody&ui_locales=fr');
    expect(unknown.status).toBe(400);
    expectLanguage(unknown, 'fr');
    expect(unknown.body).toContain('<h1>Cette demande ne peut pas aboutir</h1>');
    expect(unknown.body).toContain('L’application qui vous a envoyé ici est inconnue.');
    const byHeader = await get('/authorize?client_id=nobody', CANADA);
    expectLanguage(byHeader, 'fr');
    const page = await get(authorizePath({ ui_locales: 'fr' }));
    const forged = hiddenInputs(page.body).map(([n, v]): [string, string] => [
      n,
      n === 'csrf_token' ? `${v.slice(0, -2)}AA` : v,
    ]);
    const expired = await post('/authorize', [...forged, ['username', 'a'], ['password', 'b']]);
    expect(expired.status).toBe(400);
    expectLanguage(expired, 'fr');
    expect(expired.body).toContain(
      'Ce formulaire a expiré ou a été modifié. Retournez à l’application et recommencez.',
    );
    const mixed = await request(app, '/authorize', {
      method: 'POST',
      headers: { ...FORM, 'Accept-Language': 'fr' },
      body: 'decision=approve&username=alice',
    });
    expectLanguage(mixed, 'fr');
    expect(mixed.body).toContain('Le formulaire envoyé ne vient pas de ces pages.');
    const repeated = await get(`${authorizePath({ ui_locales: 'fr' })}&ui_locales=en`);
    expect(repeated.status).toBe(303);
    expect(repeated.headers.location).toContain('error=invalid_request');
  });

  it('answers the 429 page of the credential guard in French', async () => {
    const guarded = await start(1);
    const wrong = async () => {
      const page = await get(authorizePath(), CANADA, undefined, guarded);
      return request(guarded, '/authorize', {
        method: 'POST',
        headers: { ...FORM, 'Accept-Language': CANADA },
        body: new URLSearchParams(signInFields(page, 'nope')).toString(),
      });
    };
    expect((await wrong()).status).toBe(401);
    const throttled = await wrong();
    expect(throttled.status).toBe(429);
    expectLanguage(throttled, 'fr');
    expect(throttled.body).toContain('<h1>Trop de tentatives</h1>');
    expect(throttled.body).toContain('Réessayez dans une minute.');
  });

  it('gives custom pages the language, the text in it', async () => {
    const custom = await start(100, true);
    const reply = await get(
      '/authorize?client_id=nobody&ui_locales=fr',
      undefined,
      undefined,
      custom,
    );
    expectLanguage(reply, 'fr');
    expect(errorData.at(-1)).toEqual({
      status: 400,
      title: 'Cette demande ne peut pas aboutir',
      message: 'L’application qui vous a envoyé ici est inconnue.',
      language: 'fr',
    });
    expect(pageMessages(errorData.at(-1)!.language).signInTitle).toBe('Connexion');
    // a page called without a language is English, as before
    expect(defaultPages.error({ status: 400, title: 'T', message: 'M' })).toContain(
      '<html lang="en">',
    );
    expect(localizeMessage('fr', 'Not a sentence of ours.')).toBe('Not a sentence of ours.');
  });
});

describe('/device/verify pages', () => {
  async function userCode(): Promise<string> {
    const reply = await post('/device', [['client_id', 'tv']]);
    return (JSON.parse(reply.body) as { user_code: string }).user_code;
  }

  for (const [how, query, language] of [
    ['ui_locales', '&ui_locales=fr', undefined],
    ['Accept-Language', '', CANADA],
  ] as const) {
    it(`are in French by ${how}: sign-in, code, bad code, done`, async () => {
      const code = await userCode();
      const withLanguage = (fields: [string, string][], cookie?: string) =>
        request(app, '/device/verify', {
          method: 'POST',
          headers: {
            ...FORM,
            ...(cookie === undefined ? {} : { Cookie: cookie }),
            ...(language === undefined ? {} : { 'Accept-Language': language }),
          },
          body: new URLSearchParams(fields).toString(),
        });
      const signIn = await get(`/device/verify?user_code=${code}${query}`, language);
      expectLanguage(signIn, 'fr');
      expect(signIn.body).toContain('<h1>Connexion</h1>');
      const codePage = await withLanguage(signInFields(signIn));
      const cookie = sessionCookie(codePage.headers)!;
      expectLanguage(codePage, 'fr');
      expect(codePage.body).toContain('<h1>Connecter un appareil</h1>');
      expect(codePage.body).toContain('<strong>Salon TV</strong> (<code>tv</code>) demande à');
      const bad = await get(`/device/verify?user_code=BCDF-GHJK${query}`, language, cookie);
      expectLanguage(bad, 'fr');
      expect(bad.body).toContain('Ce code n’est pas valide ou a expiré.');
      const done = await withLanguage(
        [...hiddenInputs(codePage.body), ['user_code', code], ['decision', 'approve']],
        cookie,
      );
      expect(done.status).toBe(200);
      expectLanguage(done, 'fr');
      expect(done.body).toContain('<h1>Appareil connecté</h1>');
      expect(done.body).toContain('Salon TV peut maintenant utiliser votre compte.');
    });
  }

  it('are in English by default', async () => {
    const page = await get('/device/verify');
    expectLanguage(page, 'en');
    expect(page.body).toContain('<h1>Sign in</h1>');
    const choose = await request(app, '/device/verify', {
      method: 'POST',
      headers: { ...FORM, 'Accept-Language': 'fr' },
      body: 'decision=maybe&username=x',
    });
    expectLanguage(choose, 'fr');
    expect(choose.body).toContain('Ce formulaire ne vient pas de nous.');
  });
});
