import type { ServerResponse } from 'node:http';
import { send } from '../../core/send.js';
import { setContentLanguage } from '../../http/representation/language.js';
import type { SignInLink } from '../context.js';
import { formatMessage, type PageMessages, pageMessages } from './messages.js';

/** The name/value pairs a form carries in hidden inputs, in order. */
export type FormFields = readonly (readonly [name: string, value: string])[];

/** Who is signed in, as the pages show them. */
export interface PageUser {
  sub: string;
  name?: string;
}

/** What the sign-in page shows. Its form posts `username`, `password` and every `hidden` field. */
export interface SignInPageData {
  /** The application that asks, when there is one (the authorization endpoint). */
  clientName?: string;
  /**
   * The application registered itself: its name is its own claim, marked unverified.
   * @defaultValue `false`
   */
  unverified?: boolean;
  /** A message after a failed attempt. */
  error?: string;
  /** The user name typed before, to fill in again. */
  username?: string;
  /** Hidden inputs the form must send back as they are (the pending request and its token). */
  hidden: FormFields;
  /**
   * Links to sign in at an upstream provider instead (the `signInWith` option), each
   * returning to this request once signed in.
   * @defaultValue none
   */
  links?: readonly SignInLink[];
  /**
   * The language to write the page in (`'en'` or `'fr'`, from `ui_locales` or
   * `Accept-Language`): its text is {@link pageMessages}`(language)`.
   * @defaultValue `'en'`
   */
  language?: string;
}

/** What the consent page shows. Its form posts `decision` (`approve` or `deny`) and `hidden`. */
export interface ConsentPageData {
  clientId: string;
  clientName: string;
  /**
   * The client registered itself (dynamic registration, or a client ID metadata document):
   * its name is its own claim. The page marks it unverified, with its client id, and names the
   * host the answer goes to.
   * @defaultValue `false`: a client the deployment configured
   */
  unverified?: boolean;
  /** The scopes the application would get. */
  scopes: readonly string[];
  user: PageUser;
  /** Where the answer goes. */
  redirectUri: string;
  hidden: FormFields;
  /**
   * The language to write the page in (`'en'` or `'fr'`, from `ui_locales` or
   * `Accept-Language`): its text is {@link pageMessages}`(language)`.
   * @defaultValue `'en'`
   */
  language?: string;
}

/**
 * What the device verification page shows. Its form posts `user_code`, `decision` and `hidden`.
 * When the filled-in code is known, the page must show the device's client and the scopes
 * (RFC 8628 §5.4): its Allow approves exactly that (the hidden inputs bind it to the code).
 */
export interface DeviceCodePageData {
  user: PageUser;
  /** The code to fill in (from `verification_uri_complete`, or typed before). */
  userCode?: string;
  /** The device's client id, when the filled-in code is known. */
  clientId?: string;
  /** The device's application (its name, else its id), when the filled-in code is known. */
  clientName?: string;
  /** The scopes the device would get, when the filled-in code is known. */
  scopes?: readonly string[];
  /** A message after a failed attempt. */
  error?: string;
  hidden: FormFields;
  /**
   * The language to write the page in (`'en'` or `'fr'`, from `ui_locales` or
   * `Accept-Language`): its text is {@link pageMessages}`(language)`.
   * @defaultValue `'en'`
   */
  language?: string;
}

/** What the page after a device decision shows. */
export interface DeviceDonePageData {
  approved: boolean;
  clientName?: string;
  /**
   * The language to write the page in (`'en'` or `'fr'`, from `ui_locales` or
   * `Accept-Language`): its text is {@link pageMessages}`(language)`.
   * @defaultValue `'en'`
   */
  language?: string;
}

/**
 * What the sign-out page shows (OpenID Connect RP-Initiated Logout 1.0): whether to end the
 * session at this server. Its form posts `decision` (`logout` or `stay`) and `hidden`.
 */
export interface LogoutPageData {
  user: PageUser;
  /** The application that asked for the sign-out, when it is known. */
  clientName?: string;
  hidden: FormFields;
  /**
   * The language to write the page in (`'en'` or `'fr'`, from `ui_locales` or
   * `Accept-Language`): its text is {@link pageMessages}`(language)`.
   * @defaultValue `'en'`
   */
  language?: string;
}

/** What the page after a sign-out request shows, when there is nowhere to send the user back. */
export interface LoggedOutPageData {
  /** False when the user chose to stay signed in. */
  signedOut: boolean;
  /**
   * The language to write the page in (`'en'` or `'fr'`, from `ui_locales` or
   * `Accept-Language`): its text is {@link pageMessages}`(language)`.
   * @defaultValue `'en'`
   */
  language?: string;
}

/**
 * What an error page shows. `title` and `message` are portico's own text (never the
 * request's), already in `language`.
 */
export interface ErrorPageData {
  status: number;
  title: string;
  message: string;
  /**
   * The language to write the page in (`'en'` or `'fr'`, from `ui_locales` or
   * `Accept-Language`): its text is {@link pageMessages}`(language)`.
   * @defaultValue `'en'`
   */
  language?: string;
}

/**
 * The HTML pages of the authorization server, each a function from data to a complete
 * document. Replace any of them through the endpoints' `pages` option; keep the form
 * fields (`<form method="post">`, the named inputs and every hidden input, see
 * {@link hiddenInputs}) and escape what you insert ({@link escapeHtml}). The pages are sent
 * with a Content Security Policy that allows no script and no external resource, only
 * inline styles.
 */
export interface OAuthPages {
  signIn(data: SignInPageData): string;
  consent(data: ConsentPageData): string;
  deviceCode(data: DeviceCodePageData): string;
  deviceDone(data: DeviceDonePageData): string;
  logout(data: LogoutPageData): string;
  loggedOut(data: LoggedOutPageData): string;
  error(data: ErrorPageData): string;
}

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/**
 * Escapes text for HTML content and quoted attribute values.
 *
 * @example
 * ```ts
 * `<p>${escapeHtml(client.name)}</p>`
 * ```
 */
export function escapeHtml(text: string): string {
  return String(text).replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

/**
 * The hidden inputs of a form, escaped, one per line.
 *
 * @example
 * ```ts
 * hiddenInputs([['client_id', 'spa'], ['state', 'a"b']]);
 * // <input type="hidden" name="client_id" value="spa">
 * // <input type="hidden" name="state" value="a&quot;b">
 * ```
 */
export function hiddenInputs(fields: FormFields): string {
  return fields
    .map(
      ([name, value]) =>
        `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`,
    )
    .join('\n');
}

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f4f5f7;color:#1b1d21}
main{max-width:26rem;margin:4rem auto;padding:2rem;background:#fff;border-radius:.5rem;box-shadow:0 1px 4px #0002}
h1{font-size:1.4rem;margin:0 0 1rem}label{display:block;margin:.75rem 0 .25rem;font-weight:600}
input[type=text],input[type=password]{box-sizing:border-box;width:100%;padding:.5rem;font:inherit;border:1px solid #767676;border-radius:.25rem}
button{font:inherit;padding:.5rem 1.25rem;margin:1rem .5rem 0 0;border-radius:.25rem;border:1px solid #1a56db;background:#1a56db;color:#fff;cursor:pointer}
button[value=deny],button[value=stay]{background:#fff;color:#1a56db}button:focus-visible,input:focus-visible{outline:3px solid #f59e0b;outline-offset:2px}
.error{color:#a40e26;background:#fdecee;padding:.5rem .75rem;border-radius:.25rem}.note{color:#4b5563;font-size:.9rem}
code{font-size:1rem}`;

function layout(title: string, body: string, language: string | undefined): string {
  return `<!doctype html>
<html lang="${escapeHtml(language ?? 'en')}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(title)}</title>
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

const alert = (message: string | undefined) =>
  message === undefined ? '' : `<p class="error" role="alert">${escapeHtml(message)}</p>\n`;

/** A template of `t` as HTML: its text escaped, its values inserted as they are. */
const html = (template: string, values: Readonly<Record<string, string>>) =>
  formatMessage(template, values, escapeHtml);

const strong = (text: string) => `<strong>${escapeHtml(text)}</strong>`;

/** The links to upstream providers, after the form. */
function signInLinks(t: PageMessages, links: readonly SignInLink[] | undefined): string {
  if (links === undefined || links.length === 0) return '';
  const items = links.map(
    (link) =>
      `<li><a href="${escapeHtml(link.href)}">${html(t.signInWith, { provider: escapeHtml(link.label) })}</a></li>`,
  );
  return `\n<ul class="providers">\n${items.join('\n')}\n</ul>`;
}

function scopeList(t: PageMessages, scopes: readonly string[]): string {
  if (scopes.length === 0) return `<p>${escapeHtml(t.noAccess)}</p>`;
  const items = scopes.map((scope) => {
    const text = Object.hasOwn(t.scopes, scope) ? t.scopes[scope] : undefined;
    return text === undefined
      ? `<li><code>${escapeHtml(scope)}</code></li>`
      : `<li>${escapeHtml(text)} (<code>${escapeHtml(scope)}</code>)</li>`;
  });
  return `<ul>\n${items.join('\n')}\n</ul>`;
}

const displayName = (user: PageUser) => user.name ?? user.sub;

const decisionButtons = (t: PageMessages) =>
  `<button type="submit" name="decision" value="approve">${escapeHtml(t.allow)}</button>
<button type="submit" name="decision" value="deny">${escapeHtml(t.deny)}</button>`;

/** The device a known user code belongs to, and what it would get. */
function deviceRequest(t: PageMessages, data: DeviceCodePageData): string {
  const id =
    data.clientId === undefined || data.clientId === data.clientName
      ? ''
      : ` (<code>${escapeHtml(data.clientId)}</code>)`;
  return `<p>${html(t.deviceAsks, { client: `${strong(data.clientName ?? '')}${id}` })}</p>
${scopeList(t, data.scopes ?? [])}
<p class="note">${escapeHtml(t.deviceCheck)}</p>
`;
}

/**
 * portico's default pages: small, escaped, accessible, without scripts or external resources.
 *
 * @example
 * ```ts
 * // replace the sign-in page, keep the others
 * createAuthorizationServer({ ...options, pages: { signIn: (data) => mySignInPage(data) } });
 * defaultPages.error({ status: 400, title: 'Unknown client', message: 'No such client.' });
 * ```
 */
export const defaultPages: OAuthPages = Object.freeze({
  signIn(data: SignInPageData): string {
    const t = pageMessages(data.language);
    const to =
      data.clientName === undefined
        ? ''
        : `<p>${html(t.continueTo, {
            client:
              data.unverified === true
                ? `${strong(data.clientName)} <span class="unverified">(${escapeHtml(t.unverified)})</span>`
                : strong(data.clientName),
          })}</p>\n`;
    return layout(
      t.signInTitle,
      `<h1>${escapeHtml(t.signInTitle)}</h1>
${to}${alert(data.error)}<form method="post">
${hiddenInputs(data.hidden)}
<label for="username">${escapeHtml(t.username)}</label>
<input type="text" id="username" name="username" value="${escapeHtml(data.username ?? '')}" autocomplete="username" autocapitalize="none" spellcheck="false" required autofocus>
<label for="password">${escapeHtml(t.password)}</label>
<input type="password" id="password" name="password" autocomplete="current-password" required>
<button type="submit">${escapeHtml(t.signInButton)}</button>
</form>${signInLinks(t, data.links)}`,
      data.language,
    );
  },

  consent(data: ConsentPageData): string {
    const t = pageMessages(data.language);
    let target = data.redirectUri;
    try {
      const url = new URL(data.redirectUri);
      target = url.protocol === 'http:' || url.protocol === 'https:' ? url.host : url.protocol;
    } catch {}
    const unverified = data.unverified === true;
    // an unverified name is shown as text the client chose, never as the service's word
    const client = unverified
      ? `${strong(data.clientName)} <span class="unverified">(${escapeHtml(t.unverified)}, <code>${escapeHtml(data.clientId)}</code>)</span>`
      : strong(data.clientName);
    const warning = unverified
      ? `<p class="error" role="note">${html(t.unverifiedNote, { target: strong(target) })}</p>\n`
      : '';
    return layout(
      formatMessage(t.consentTitle, {
        client: unverified ? `${data.clientName} (${t.unverified})` : data.clientName,
      }),
      `<h1>${html(t.consentHeading, { client })}</h1>
${warning}<p>${html(t.signedInAs, { user: strong(displayName(data.user)) })}</p>
<p>${escapeHtml(t.applicationAsks)}</p>
${scopeList(t, data.scopes)}
<form method="post">
${hiddenInputs(data.hidden)}
${decisionButtons(t)}
</form>
<p class="note">${html(t.sentBackTo, { target: strong(target) })}</p>`,
      data.language,
    );
  },

  deviceCode(data: DeviceCodePageData): string {
    const t = pageMessages(data.language);
    const known = data.clientName === undefined ? '' : deviceRequest(t, data);
    return layout(
      t.deviceTitle,
      `<h1>${escapeHtml(t.deviceTitle)}</h1>
<p>${html(t.deviceIntro, { user: strong(displayName(data.user)) })}</p>
${alert(data.error)}${known}<form method="post">
${hiddenInputs(data.hidden)}
<label for="user_code">${escapeHtml(t.code)}</label>
<input type="text" id="user_code" name="user_code" value="${escapeHtml(data.userCode ?? '')}" autocomplete="one-time-code" autocapitalize="characters" spellcheck="false" maxlength="32" required autofocus>
${decisionButtons(t)}
</form>`,
      data.language,
    );
  },

  deviceDone(data: DeviceDonePageData): string {
    const t = pageMessages(data.language);
    const device = escapeHtml(data.clientName ?? t.theDevice);
    const title = data.approved ? t.deviceConnected : t.deviceRefused;
    const text = data.approved ? t.deviceConnectedText : t.deviceRefusedText;
    return layout(
      title,
      `<h1>${escapeHtml(title)}</h1>\n<p role="status">${html(text, { device })}</p>`,
      data.language,
    );
  },

  logout(data: LogoutPageData): string {
    const t = pageMessages(data.language);
    const asked =
      data.clientName === undefined
        ? ''
        : `<p>${html(t.logoutAsked, { client: strong(data.clientName) })}</p>\n`;
    return layout(
      t.logoutTitle,
      `<h1>${escapeHtml(t.logoutHeading)}</h1>
<p>${html(t.signedInAs, { user: strong(displayName(data.user)) })}</p>
${asked}<form method="post">
${hiddenInputs(data.hidden)}
<button type="submit" name="decision" value="logout">${escapeHtml(t.signOutButton)}</button>
<button type="submit" name="decision" value="stay">${escapeHtml(t.staySignedIn)}</button>
</form>`,
      data.language,
    );
  },

  loggedOut(data: LoggedOutPageData): string {
    const t = pageMessages(data.language);
    const title = data.signedOut ? t.signedOutTitle : t.stillSignedInTitle;
    const text = data.signedOut ? t.signedOutText : t.stillSignedInText;
    return layout(
      title,
      `<h1>${escapeHtml(title)}</h1>\n<p role="status">${escapeHtml(text)}</p>`,
      data.language,
    );
  },

  error(data: ErrorPageData): string {
    return layout(
      data.title,
      `<h1>${escapeHtml(data.title)}</h1>\n<p role="alert">${escapeHtml(data.message)}</p>`,
      data.language,
    );
  },
});

/**
 * The CSP source that lets a form's redirect reach `uri`: its origin for http(s), its
 * scheme for a private-use scheme (`com.example.app:`), nothing if it cannot be expressed.
 */
export function formActionSource(uri: string): string | undefined {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return undefined;
  }
  const source = url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : url.protocol;
  return /^[A-Za-z][A-Za-z0-9+.-]*:[^\s;,'"]*$/.test(source) ? source : undefined;
}

/**
 * Sends an HTML page: `text/html; charset=utf-8`, `no-store`, and a Content Security Policy
 * (replacing the API default) that allows inline styles only and lets forms post to this
 * origin and redirect to `formTargets` (Chromium applies `form-action` to the redirect
 * that follows a form post). With `language`, the page says which one it is written in
 * (`Content-Language`) and that it was chosen by `Accept-Language` (`Vary`).
 */
export function sendPage(
  res: ServerResponse,
  status: number,
  html: string,
  options: {
    formTargets?: readonly string[];
    headers?: Readonly<Record<string, string>>;
    /** The page's language: `Content-Language`, and `Vary: Accept-Language`. */
    language?: string;
  } = {},
): void {
  if (options.language !== undefined) setContentLanguage(res, options.language);
  const sources = ["'self'"];
  for (const target of options.formTargets ?? []) {
    const source = formActionSource(target);
    if (source !== undefined && !sources.includes(source)) sources.push(source);
  }
  send(res, status, html, {
    'Content-Type': 'text/html; charset=utf-8',
    'Cache-Control': 'no-store',
    Pragma: 'no-cache',
    'Content-Security-Policy': `default-src 'none'; style-src 'unsafe-inline'; form-action ${sources.join(' ')}; frame-ancestors 'none'; base-uri 'none'`,
    'X-Frame-Options': 'DENY',
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
    ...options.headers,
  });
}
