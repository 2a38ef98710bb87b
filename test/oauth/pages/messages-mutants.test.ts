// The words of the authorization server's pages (src/oauth/pages/messages.ts): both message
// tables pinned whole (a change of wording must be a deliberate snapshot update), the language
// choice (ui_locales first, then Accept-Language, else English), formatMessage, and a few of
// the texts as real pages serve them.
import type { RequestListener } from 'node:http';
import { afterAll, describe, expect, it, vi } from 'vitest';
import {
  choosePageLanguage,
  formatMessage,
  localizeMessage,
  PAGE_LANGUAGES,
} from '../../../src/oauth/pages/messages.js';
import { closeAll, type Listening, listen, request } from '../../helpers/http.js';
import { pkce } from '../token-fixtures.js';

/**
 * The module loaded afresh inside the test: its tables are built while the test runs (so
 * that per-test coverage links them to it, and a mutated table is the one tested).
 */
async function freshMessages() {
  vi.resetModules();
  return import('../../../src/oauth/pages/messages.js');
}

afterAll(closeAll);

const WEB = 'https://app.example.com/cb';

describe('page-messages.ts', () => {
  describe('message tables', () => {
    for (const language of PAGE_LANGUAGES) {
      it(`pins every ${language} text of the pages`, async () => {
        const { pageMessages } = await freshMessages();
        await expect(`${JSON.stringify(pageMessages(language), null, 2)}\n`).toMatchFileSnapshot(
          `./__snapshots__/page-messages.${language}.json`,
        );
      });
    }

    it('has the same keys in both languages, a French text for every one', async () => {
      const { pageMessages } = await freshMessages();
      const en = pageMessages('en');
      const fr = pageMessages('fr');
      expect(Object.keys(fr).sort()).toEqual(Object.keys(en).sort());
      expect(Object.keys(fr.scopes).sort()).toEqual(Object.keys(en.scopes).sort());
      for (const [key, value] of Object.entries(fr)) {
        if (typeof value === 'string') expect(value, key).not.toBe('');
      }
      expect(en.text).toEqual({});
      expect(Object.keys(fr.text)).toHaveLength(35);
      // French puts a no-break space before ? and :
      expect(fr.consentTitle).toBe('Autoriser {client}\u00a0?');
      expect(fr.applicationAsks).toBe('L’application demande à\u00a0:');
    });

    it('answers English for a language it does not have', async () => {
      const { pageMessages } = await freshMessages();
      expect(pageMessages(undefined)).toBe(pageMessages('en'));
      expect(pageMessages('de')).toBe(pageMessages('en'));
      expect(pageMessages('fr')).not.toBe(pageMessages('en'));
      expect(pageMessages('en').signInTitle).toBe('Sign in');
      expect(pageMessages('fr').signInTitle).toBe('Connexion');
    });

    it('localizes portico sentences, filling in their values', () => {
      expect(
        localizeMessage(
          'fr',
          'Too many failed sign-ins from your network. Try again in {minutes} minutes.',
          { minutes: '5' },
        ),
      ).toBe('Trop de connexions échouées depuis votre réseau. Réessayez dans 5 minutes.');
      expect(
        localizeMessage('en', 'Too many codes tried. Wait {minutes} minute(s) and try again.', {
          minutes: '2',
        }),
      ).toBe('Too many codes tried. Wait 2 minute(s) and try again.');
      expect(localizeMessage('fr', 'Choose Allow or Deny.')).toBe(
        'Choisissez Autoriser ou Refuser.',
      );
    });
  });

  describe('formatMessage', () => {
    it('fills in the named values and escapes only the template text', () => {
      const upper = (text: string) => text.toUpperCase();
      expect(formatMessage('Allow {client}?', { client: 'Photos' })).toBe('Allow Photos?');
      expect(formatMessage('a {x} b {y} c', { x: '<1>', y: '<2>' }, upper)).toBe('A <1> B <2> C');
      expect(formatMessage('{x}{x}', { x: 'ab' })).toBe('abab');
    });

    it('leaves a name without a value as written', () => {
      expect(formatMessage('Hello {name}!')).toBe('Hello {name}!');
      expect(formatMessage('Hello {name}, {other}!', { other: 'you' })).toBe('Hello {name}, you!');
      expect(formatMessage('{a} {b}', { b: 'B' }, (text) => `[${text}]`)).toBe('[{a} ]B[]');
    });
  });

  describe('choosePageLanguage', () => {
    it('takes the first ui_locales tag it has, before Accept-Language', () => {
      expect(choosePageLanguage('en', 'fr')).toEqual({ language: 'fr', fromUiLocales: true });
      expect(choosePageLanguage('fr', 'de EN fr')).toEqual({ language: 'en', fromUiLocales: true });
      expect(choosePageLanguage(undefined, 'de\tFR-CA')).toEqual({
        language: 'fr',
        fromUiLocales: true,
      });
    });

    it('falls back to Accept-Language when ui_locales names none it has', () => {
      expect(choosePageLanguage('fr-CA,fr;q=0.9', 'de ja')).toEqual({
        language: 'fr',
        fromUiLocales: false,
      });
      expect(choosePageLanguage('de', 'de')).toEqual({ language: 'en', fromUiLocales: false });
      expect(choosePageLanguage('fr', '')).toEqual({ language: 'fr', fromUiLocales: false });
      expect(choosePageLanguage('fr', '*')).toEqual({ language: 'fr', fromUiLocales: false });
      expect(choosePageLanguage(['fr'], null)).toEqual({ language: 'fr', fromUiLocales: false });
      expect(choosePageLanguage(undefined, undefined)).toEqual({
        language: 'en',
        fromUiLocales: false,
      });
    });

    it('reads ui_locales of up to 512 characters, ignores a longer one', () => {
      const at512 = `fr${' '.repeat(510)}`;
      expect(at512).toHaveLength(512);
      expect(choosePageLanguage('en', at512)).toEqual({ language: 'fr', fromUiLocales: true });
      const at513 = `fr${' '.repeat(511)}`;
      expect(choosePageLanguage('en', at513)).toEqual({ language: 'en', fromUiLocales: false });
    });

    it('looks at the first 16 tags only, empty tags and * not counted', () => {
      const unknown = Array.from({ length: 15 }, (_, i) => `x${i}`);
      // fr the 16th tag: read
      expect(choosePageLanguage('en', [...unknown, 'fr'].join(' '))).toEqual({
        language: 'fr',
        fromUiLocales: true,
      });
      // fr the 17th tag: not read
      expect(choosePageLanguage('en', [...unknown, 'x15', 'fr'].join(' '))).toEqual({
        language: 'en',
        fromUiLocales: false,
      });
      // a leading blank and sixteen * are skipped, not counted
      expect(choosePageLanguage('en', ` ${[...unknown, 'fr'].join(' ')}`)).toEqual({
        language: 'fr',
        fromUiLocales: true,
      });
      expect(choosePageLanguage('en', `${'* '.repeat(16)}fr`)).toEqual({
        language: 'fr',
        fromUiLocales: true,
      });
    });
  });

  describe('the pages served', () => {
    /** A server built from modules loaded afresh inside the test (see freshMessages). */
    async function start(): Promise<Listening> {
      vi.resetModules();
      const { toNodeListener } = await import('../../../src/adapters/node.js');
      const { createSessions } = await import('../../../src/auth/session/session.js');
      const { createRouter } = await import('../../../src/http/routing/router.js');
      const { defineClient } = await import('../../../src/oauth/clients/client.js');
      const { MemoryClientStore } = await import('../../../src/oauth/clients/store.js');
      const { createKeySet } = await import('../../../src/oauth/tokens/key-set.js');
      const { createAuthorizationServer } = await import('../../../src/oauth/server.js');
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
        ]),
        keys: await createKeySet(),
        users: { verify: () => undefined, get: (sub) => ({ sub }) },
        sessions: createSessions({ allowedOrigins: [listening.url], cookie: { secure: false } }),
      });
      listener = toNodeListener([createRouter(server.routes)]);
      return listening;
    }

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

    it('serve the English sign-in page', async () => {
      const app = await start();
      const page = await request(app, authorizePath({ ui_locales: 'en' }), {
        headers: { 'Accept-Language': 'fr' },
      });
      expect(page.status).toBe(200);
      expect(page.headers['content-language']).toBe('en');
      expect(page.body).toContain('<title>Sign in</title>');
      expect(page.body).toContain('<h1>Sign in</h1>');
      expect(page.body).toContain('to continue to <strong>Photos</strong>');
      expect(page.body).toContain('<label for="username">Username</label>');
      expect(page.body).toContain('<label for="password">Password</label>');
      expect(page.body).toContain('<button type="submit">Sign in</button>');
    });

    it('serve the French sign-in page', async () => {
      const app = await start();
      const page = await request(app, authorizePath({ ui_locales: 'de fr' }));
      expect(page.status).toBe(200);
      expect(page.headers['content-language']).toBe('fr');
      expect(page.body).toContain('<h1>Connexion</h1>');
      expect(page.body).toContain('pour continuer vers <strong>Photos</strong>');
      expect(page.body).toContain('<label for="username">Nom d’utilisateur</label>');
      expect(page.body).toContain('<label for="password">Mot de passe</label>');
      expect(page.body).toContain('<button type="submit">Se connecter</button>');
    });

    it('serve the error page in the language of Accept-Language', async () => {
      const app = await start();
      const fr = await request(app, '/authorize?client_id=nobody', {
        headers: { 'Accept-Language': 'fr-CA, en;q=0.5' },
      });
      expect(fr.status).toBe(400);
      expect(fr.headers['content-language']).toBe('fr');
      expect(fr.body).toContain('<h1>Cette demande ne peut pas aboutir</h1>');
      expect(fr.body).toContain('L’application qui vous a envoyé ici est inconnue.');
      const en = await request(app, '/authorize?client_id=nobody', {
        headers: { 'Accept-Language': 'de, en;q=0.5' },
      });
      expect(en.status).toBe(400);
      expect(en.headers['content-language']).toBe('en');
      expect(en.body).toContain('<h1>This request cannot be completed</h1>');
      expect(en.body).toContain('The application that sent you here is not known.');
    });
  });
});
