// The authorization server's default pages as a browser receives them from sendPage over a
// socket: the whole document, byte for byte, with hostile values in every interpolated slot;
// the headers sendPage sets (Content-Type, Cache-Control, the Content Security Policy and its
// form-action sources); and formActionSource on the URIs it must refuse.
import { afterAll, describe, expect, it } from 'vitest';
import {
  defaultPages,
  escapeHtml,
  formActionSource,
  hiddenInputs,
  sendPage,
} from '../../../src/oauth/pages/render.js';
import { closeAll, listen, type Reply, request } from '../../helpers/http.js';

afterAll(closeAll);

/** A value with every character HTML escaping must change. */
const EVIL = `<b>"Tom" & 'Jerry'</b>`;
const EVIL_HTML = '&lt;b&gt;&quot;Tom&quot; &amp; &#39;Jerry&#39;&lt;/b&gt;';

const HIDDEN = [
  ['request', 'r"1'],
  ['csrf', `<t&'>`],
] as const;
const HIDDEN_HTML = `<input type="hidden" name="request" value="r&quot;1">
<input type="hidden" name="csrf" value="&lt;t&amp;&#39;&gt;">`;

/** The stylesheet every page carries inline (the CSP allows inline styles only). */
const STYLE = `body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f4f5f7;color:#1b1d21}
main{max-width:26rem;margin:4rem auto;padding:2rem;background:#fff;border-radius:.5rem;box-shadow:0 1px 4px #0002}
h1{font-size:1.4rem;margin:0 0 1rem}label{display:block;margin:.75rem 0 .25rem;font-weight:600}
input[type=text],input[type=password]{box-sizing:border-box;width:100%;padding:.5rem;font:inherit;border:1px solid #767676;border-radius:.25rem}
button{font:inherit;padding:.5rem 1.25rem;margin:1rem .5rem 0 0;border-radius:.25rem;border:1px solid #1a56db;background:#1a56db;color:#fff;cursor:pointer}
button[value=deny],button[value=stay]{background:#fff;color:#1a56db}button:focus-visible,input:focus-visible{outline:3px solid #f59e0b;outline-offset:2px}
.error{color:#a40e26;background:#fdecee;padding:.5rem .75rem;border-radius:.25rem}.note{color:#4b5563;font-size:.9rem}
code{font-size:1rem}`;

/** The complete document a page is, around its (already escaped) title and body. */
function documentOf(title: string, body: string, lang = 'en'): string {
  return `<!doctype html>
<html lang="${lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${title}</title>
<style>${STYLE}</style>
</head>
<body>
<main>
${body}
</main>
</body>
</html>
`;
}

const DEFAULT_CSP =
  "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/** Serves one sendPage answer on a fresh server (built here, in the test) and GETs it. */
async function served(
  html: string,
  status = 200,
  options?: Parameters<typeof sendPage>[3],
): Promise<Reply> {
  const app = await listen((_req, res) => {
    try {
      sendPage(res, status, html, options);
    } catch (error) {
      res.statusCode = 599;
      res.end(String(error));
    }
  });
  const reply = await request(app, '/');
  await app.close();
  return reply;
}

/** Asserts a page answer: status, the exact document, and sendPage's fixed headers. */
function expectPage(reply: Reply, status: number, document: string): void {
  expect(reply.status, reply.body).toBe(status);
  expect(reply.body).toBe(document);
  expect(reply.headers['content-type']).toBe('text/html; charset=utf-8');
  expect(reply.headers['content-length']).toBe(String(Buffer.byteLength(document)));
  expect(reply.headers['cache-control']).toBe('no-store');
}

describe('src/oauth/pages/render.ts', () => {
  describe('escapeHtml and hiddenInputs', () => {
    it('escapes & < > and both quotes to their entities', () => {
      expect(escapeHtml('&')).toBe('&amp;');
      expect(escapeHtml('<')).toBe('&lt;');
      expect(escapeHtml('>')).toBe('&gt;');
      expect(escapeHtml('"')).toBe('&quot;');
      expect(escapeHtml("'")).toBe('&#39;');
      expect(escapeHtml(EVIL)).toBe(EVIL_HTML);
      expect(escapeHtml('plain text')).toBe('plain text');
    });

    it('writes one escaped hidden input per line, in order', () => {
      expect(hiddenInputs(HIDDEN)).toBe(HIDDEN_HTML);
      expect(hiddenInputs([])).toBe('');
    });
  });

  describe('sign-in page', () => {
    it('shows the client, the error and the typed username, all escaped, with every field', async () => {
      const html = defaultPages.signIn({
        clientName: EVIL,
        error: EVIL,
        username: EVIL,
        hidden: HIDDEN,
      });
      const reply = await served(html, 401);
      expectPage(
        reply,
        401,
        documentOf(
          'Sign in',
          `<h1>Sign in</h1>
<p>to continue to <strong>${EVIL_HTML}</strong></p>
<p class="error" role="alert">${EVIL_HTML}</p>
<form method="post">
${HIDDEN_HTML}
<label for="username">Username</label>
<input type="text" id="username" name="username" value="${EVIL_HTML}" autocomplete="username" autocapitalize="none" spellcheck="false" required autofocus>
<label for="password">Password</label>
<input type="password" id="password" name="password" autocomplete="current-password" required>
<button type="submit">Sign in</button>
</form>`,
        ),
      );
    });

    it('without a client, an error or a username shows none of them', async () => {
      const html = defaultPages.signIn({ hidden: [['request', 'r1']] });
      const reply = await served(html);
      expectPage(
        reply,
        200,
        documentOf(
          'Sign in',
          `<h1>Sign in</h1>
<form method="post">
<input type="hidden" name="request" value="r1">
<label for="username">Username</label>
<input type="text" id="username" name="username" value="" autocomplete="username" autocapitalize="none" spellcheck="false" required autofocus>
<label for="password">Password</label>
<input type="password" id="password" name="password" autocomplete="current-password" required>
<button type="submit">Sign in</button>
</form>`,
        ),
      );
    });

    it('is written in French, with an escaped lang attribute', async () => {
      const html = defaultPages.signIn({ hidden: [], clientName: 'Photos', language: 'fr' });
      expect(html).toContain('<html lang="fr">');
      expect(html).toContain('<title>Connexion</title>');
      expect(html).toContain('<p>pour continuer vers <strong>Photos</strong></p>\n<form');
      expect(defaultPages.signIn({ hidden: [], language: '"><x' })).toContain(
        '<html lang="&quot;&gt;&lt;x">',
      );
    });
  });

  describe('consent page', () => {
    const consent = (redirectUri: string, scopes: readonly string[] = ['openid']) =>
      defaultPages.consent({
        clientId: 'photos',
        clientName: EVIL,
        scopes,
        user: { sub: 'alice-sub', name: EVIL },
        redirectUri,
        hidden: HIDDEN,
      });

    it('names the client and user escaped, lists the scopes and shows the host it sends back to', async () => {
      const html = consent('https://app.example.com:8443/cb?x=1', [
        'openid',
        'photos:<read>',
        'toString',
      ]);
      const reply = await served(html);
      expectPage(
        reply,
        200,
        documentOf(
          `Allow ${EVIL_HTML}?`,
          `<h1>Allow <strong>${EVIL_HTML}</strong> to use your account?</h1>
<p>Signed in as <strong>${EVIL_HTML}</strong>.</p>
<p>The application asks to:</p>
<ul>
<li>Confirm who you are (<code>openid</code>)</li>
<li><code>photos:&lt;read&gt;</code></li>
<li><code>toString</code></li>
</ul>
<form method="post">
${HIDDEN_HTML}
<button type="submit" name="decision" value="approve">Allow</button>
<button type="submit" name="decision" value="deny">Deny</button>
</form>
<p class="note">Either way you will be sent back to <strong>app.example.com:8443</strong>.</p>`,
        ),
      );
    });

    it('with no scope says it gives no access, and names the user by sub without a name', () => {
      const html = defaultPages.consent({
        clientId: 'photos',
        clientName: 'Photos',
        scopes: [],
        user: { sub: 'alice<sub>' },
        redirectUri: 'http://127.0.0.1:3000/cb',
        hidden: [],
      });
      expect(html).toContain(`<p>Signed in as <strong>alice&lt;sub&gt;</strong>.</p>
<p>The application asks to:</p>
<p>No access to your data.</p>
<form method="post">

<button type="submit"`);
      expect(html).toContain('sent back to <strong>127.0.0.1:3000</strong>.</p>');
    });

    it('shows the host of an http(s) redirect, the scheme of a private-use one, an unparsable one as given', () => {
      const target = (uri: string) =>
        /sent back to <strong>(.*)<\/strong>\.<\/p>/.exec(consent(uri))?.[1];
      expect(target('https://app.example.com/cb#x')).toBe('app.example.com');
      expect(target('http://localhost:8080/cb')).toBe('localhost:8080');
      expect(target('com.example.app:/oauth/cb')).toBe('com.example.app:');
      expect(target('ftp://files.example.com/cb')).toBe('ftp:');
      expect(target('not a <uri>')).toBe('not a &lt;uri&gt;');
    });
  });

  describe('device page', () => {
    it('before a code is known shows the user, the error and the typed code, escaped', async () => {
      const html = defaultPages.deviceCode({
        user: { sub: 'alice', name: EVIL },
        userCode: EVIL,
        error: EVIL,
        hidden: HIDDEN,
      });
      const reply = await served(html, 400);
      expectPage(
        reply,
        400,
        documentOf(
          'Connect a device',
          `<h1>Connect a device</h1>
<p>Signed in as <strong>${EVIL_HTML}</strong>. Enter the code your device shows, and allow it only if you started this on that device.</p>
<p class="error" role="alert">${EVIL_HTML}</p>
<form method="post">
${HIDDEN_HTML}
<label for="user_code">Code</label>
<input type="text" id="user_code" name="user_code" value="${EVIL_HTML}" autocomplete="one-time-code" autocapitalize="characters" spellcheck="false" maxlength="32" required autofocus>
<button type="submit" name="decision" value="approve">Allow</button>
<button type="submit" name="decision" value="deny">Deny</button>
</form>`,
        ),
      );
    });

    it('for a known code names the client, its id and the scopes it would get', async () => {
      const html = defaultPages.deviceCode({
        user: { sub: 'alice' },
        userCode: 'WDJB-MJHT',
        clientId: `tv"<id>`,
        clientName: EVIL,
        scopes: ['openid', 'tv:<watch>'],
        hidden: [['user_code', 'WDJB-MJHT']],
      });
      const reply = await served(html);
      expectPage(
        reply,
        200,
        documentOf(
          'Connect a device',
          `<h1>Connect a device</h1>
<p>Signed in as <strong>alice</strong>. Enter the code your device shows, and allow it only if you started this on that device.</p>
<p><strong>${EVIL_HTML}</strong> (<code>tv&quot;&lt;id&gt;</code>) asks to:</p>
<ul>
<li>Confirm who you are (<code>openid</code>)</li>
<li><code>tv:&lt;watch&gt;</code></li>
</ul>
<p class="note">Allow only if this is the device you are connecting.</p>
<form method="post">
<input type="hidden" name="user_code" value="WDJB-MJHT">
<label for="user_code">Code</label>
<input type="text" id="user_code" name="user_code" value="WDJB-MJHT" autocomplete="one-time-code" autocapitalize="characters" spellcheck="false" maxlength="32" required autofocus>
<button type="submit" name="decision" value="approve">Allow</button>
<button type="submit" name="decision" value="deny">Deny</button>
</form>`,
        ),
      );
    });

    it('leaves out the client id when there is none or it is the name, and the scopes when none are given', () => {
      const known = (clientId: string | undefined, scopes?: readonly string[]) =>
        defaultPages.deviceCode({
          user: { sub: 'alice' },
          ...(clientId !== undefined && { clientId }),
          clientName: 'tv',
          ...(scopes !== undefined && { scopes }),
          hidden: [],
        });
      const withoutId = `<p><strong>tv</strong> asks to:</p>
<p>No access to your data.</p>
<p class="note">Allow only if this is the device you are connecting.</p>
<form method="post">`;
      expect(known(undefined)).toContain(withoutId);
      expect(known('tv')).toContain(withoutId);
      expect(known('tv', [])).toContain(withoutId);
      expect(
        known('tv-1', ['openid']),
      ).toContain(`<p><strong>tv</strong> (<code>tv-1</code>) asks to:</p>
<ul>
<li>Confirm who you are (<code>openid</code>)</li>
</ul>
`);
    });

    it('without a code, an error or a client shows an empty code field only', () => {
      const html = defaultPages.deviceCode({ user: { sub: 'alice' }, hidden: [] });
      expect(html).toContain(`on that device.</p>
<form method="post">

<label for="user_code">Code</label>
<input type="text" id="user_code" name="user_code" value="" autocomplete`);
      expect(html).not.toContain('asks to');
    });

    it('after the decision says the device was connected or refused, naming it escaped', async () => {
      const approved = await served(defaultPages.deviceDone({ approved: true, clientName: EVIL }));
      expectPage(
        approved,
        200,
        documentOf(
          'Device connected',
          `<h1>Device connected</h1>\n<p role="status">${EVIL_HTML} can now use your account. You may close this page and return to your device.</p>`,
        ),
      );
      expect(defaultPages.deviceDone({ approved: false })).toContain(
        '<h1>Device refused</h1>\n<p role="status">The device was not given access. You may close this page.</p>',
      );
    });
  });

  describe('sign-out pages', () => {
    it('asks whether to sign out, naming the asking client and the user escaped', async () => {
      const html = defaultPages.logout({
        user: { sub: 'alice', name: EVIL },
        clientName: EVIL,
        hidden: HIDDEN,
      });
      const reply = await served(html);
      expectPage(
        reply,
        200,
        documentOf(
          'Sign out',
          `<h1>Sign out of this service?</h1>
<p>Signed in as <strong>${EVIL_HTML}</strong>.</p>
<p><strong>${EVIL_HTML}</strong> asks you to sign out.</p>
<form method="post">
${HIDDEN_HTML}
<button type="submit" name="decision" value="logout">Sign out</button>
<button type="submit" name="decision" value="stay">Stay signed in</button>
</form>`,
        ),
      );
    });

    it('without a client says nothing about who asked', () => {
      const html = defaultPages.logout({ user: { sub: 'alice' }, hidden: [] });
      expect(html).toContain(`<p>Signed in as <strong>alice</strong>.</p>
<form method="post">
`);
      expect(html).not.toContain('asks you to sign out');
    });

    it('after the request says whether the user is signed out', async () => {
      const out = await served(defaultPages.loggedOut({ signedOut: true }));
      expectPage(
        out,
        200,
        documentOf(
          'Signed out',
          '<h1>Signed out</h1>\n<p role="status">You are signed out. You may close this page.</p>',
        ),
      );
      expect(defaultPages.loggedOut({ signedOut: false, language: 'fr' })).toContain(
        '<h1>Session toujours ouverte</h1>\n<p role="status">Votre session reste ouverte. Vous pouvez fermer cette page.</p>',
      );
    });
  });

  describe('error page', () => {
    it('shows the title and message escaped with the status given', async () => {
      const reply = await served(
        defaultPages.error({ status: 400, title: EVIL, message: EVIL }),
        400,
      );
      expectPage(
        reply,
        400,
        documentOf(EVIL_HTML, `<h1>${EVIL_HTML}</h1>\n<p role="alert">${EVIL_HTML}</p>`),
      );
    });
  });

  describe('sendPage', () => {
    it('sends the page with no-store, a strict CSP and the framing and sniffing guards', async () => {
      const reply = await served('<p>x</p>', 403);
      expect(reply.status).toBe(403);
      expect(reply.body).toBe('<p>x</p>');
      expect(reply.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(reply.headers['cache-control']).toBe('no-store');
      expect(reply.headers.pragma).toBe('no-cache');
      expect(reply.headers['content-security-policy']).toBe(DEFAULT_CSP);
      expect(reply.headers['x-frame-options']).toBe('DENY');
      expect(reply.headers['x-content-type-options']).toBe('nosniff');
      expect(reply.headers['referrer-policy']).toBe('no-referrer');
      expect(reply.headers['content-language']).toBeUndefined();
      expect(reply.headers.vary).toBeUndefined();
    });

    it('says the language the page is written in, and that Accept-Language chose it', async () => {
      const reply = await served('<p>x</p>', 200, { language: 'fr' });
      expect(reply.status).toBe(200);
      expect(reply.headers['content-language']).toBe('fr');
      expect(reply.headers.vary).toBe('Accept-Language');
    });

    it('lets forms redirect to each distinct expressible target, once', async () => {
      const reply = await served('<p>x</p>', 200, {
        formTargets: [
          'https://app.example.com/cb',
          'https://app.example.com/other',
          'not a url',
          'com.example.app:/cb',
          'https://a,b.example:8443/cb',
          'http://127.0.0.1:3000/cb',
        ],
      });
      expect(reply.status, reply.body).toBe(200);
      expect(reply.headers['content-security-policy']).toBe(
        "default-src 'none'; style-src 'unsafe-inline'; form-action 'self' https://app.example.com com.example.app: http://127.0.0.1:3000; frame-ancestors 'none'; base-uri 'none'",
      );
    });

    it('keeps the default policy when no target can be expressed', async () => {
      const reply = await served('<p>x</p>', 200, { formTargets: ['::', 'https://a;b.example/'] });
      expect(reply.status, reply.body).toBe(200);
      expect(reply.headers['content-security-policy']).toBe(DEFAULT_CSP);
    });

    it('lets the caller add or replace headers', async () => {
      const reply = await served('<p>x</p>', 429, {
        headers: { 'Retry-After': '60', 'Cache-Control': 'private, no-store' },
      });
      expect(reply.status).toBe(429);
      expect(reply.headers['retry-after']).toBe('60');
      expect(reply.headers['cache-control']).toBe('private, no-store');
    });
  });

  describe('formActionSource', () => {
    it('is the origin of an http(s) URI and the scheme of another', () => {
      expect(formActionSource('https://app.example.com:8443/cb?x#y')).toBe(
        'https://app.example.com:8443',
      );
      expect(formActionSource('com.example.app:/cb')).toBe('com.example.app:');
    });

    it('is nothing for a URI that does not parse or whose source a CSP cannot carry', () => {
      expect(formActionSource('not a url')).toBeUndefined();
      expect(formActionSource('')).toBeUndefined();
      expect(formActionSource('https://a,b.example:8443/cb')).toBeUndefined();
      expect(formActionSource("http://a'b.example/")).toBeUndefined();
    });
  });
});
