import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { SessionRecord } from '../../auth/session/store.js';
import type { Duration } from '../../core/duration.js';
import { HttpError } from '../../core/errors/errors.js';
import { readForm } from '../../http/body/body.js';
import { durationOption, invalidOption, secretKeyOption } from '../../internal/options.js';
import type { OAuthContext } from '../context.js';
// the pages know nothing of form tokens: this module depends on them, never the reverse
import { choosePageLanguage, type PageLanguage } from './messages.js';
import { defaultPages, type FormFields, type OAuthPages } from './render.js';

export type { FormFields } from './render.js';

/**
 * The hidden input that carries the form token.
 *
 * @example
 * ```ts
 * const form = await readForm(req);
 * tokens.verify('consent', binding, fields, form.get(FORM_TOKEN_FIELD) ?? undefined);
 * ```
 */
export const FORM_TOKEN_FIELD = 'csrf_token';

/** Options of `createFormTokens`. */
export interface FormTokenOptions {
  /**
   * The HMAC key (32 bytes or more, or a string of 32 characters or more). Every process
   * that serves the same pages must share it: a form rendered by one must be accepted by
   * another behind the same load balancer.
   * @defaultValue 32 random bytes, new at each start (one process only)
   */
  key?: string | Uint8Array;
  /**
   * How long a rendered form stays valid, in milliseconds (at least `1_000`: a form carries
   * the second it was rendered).
   * @defaultValue `900_000` (15 minutes)
   */
  ttl?: Duration;
  /**
   * The clock, epoch milliseconds.
   * @defaultValue `Date.now`
   */
  now?: () => number;
}

/** What `createFormTokens` returns. */
export interface FormTokens {
  /** A token over `purpose`, `binding` and `fields`, valid for `ttl` milliseconds. */
  issue(purpose: string, binding: string, fields: FormFields): string;
  /** Whether `token` was issued for exactly these values and has not expired. */
  verify(purpose: string, binding: string, fields: FormFields, token: string | undefined): boolean;
}

/** A key of 32 bytes or more from the option, or a random one. */
export function formKey(owner: string, key: string | Uint8Array | undefined): Buffer {
  return secretKeyOption(owner, 'formKey', key);
}

/**
 * Stateless form tokens: an HMAC-SHA256 over what the form is for (`purpose`), whom it was
 * shown to (`binding`: the session, or nothing before sign-in), the hidden fields it carries
 * and when it was rendered. A token therefore doubles as the CSRF token (no other page or
 * user can obtain one for this session) and as the seal of the pending request (a changed
 * hidden input voids it).
 *
 * @example
 * ```ts
 * const tokens = createFormTokens('authorize', { ttl: 600_000 });
 * const token = tokens.issue('consent', sessionBinding, fields);
 * tokens.verify('consent', sessionBinding, fieldsFromPost, form.get('csrf_token') ?? undefined);
 * ```
 * @see {@link https://cheatsheetseries.owasp.org/cheatsheets/Cross-Site_Request_Forgery_Prevention_Cheat_Sheet.html | OWASP Cross-Site Request Forgery Prevention Cheat Sheet}
 */
export function createFormTokens(owner: string, options: FormTokenOptions = {}): FormTokens {
  const key = formKey(owner, options.key);
  const ttl = durationOption(owner, 'formTtl', options.ttl, 900_000, { min: 1_000 });
  const now = options.now ?? Date.now;

  const mac = (purpose: string, binding: string, fields: FormFields, issuedAt: number) =>
    createHmac('sha256', key)
      .update(JSON.stringify([purpose, binding, issuedAt, fields]))
      .digest();

  return {
    issue(purpose, binding, fields) {
      const issuedAt = Math.floor(now() / 1000);
      return `${issuedAt}.${mac(purpose, binding, fields, issuedAt).toString('base64url')}`;
    },
    verify(purpose, binding, fields, token) {
      const match = token === undefined ? null : /^(\d{1,12})\.([A-Za-z0-9_-]{43})$/.exec(token);
      if (match === null) return false;
      const issuedAt = Number(match[1]);
      // whole seconds, as the token carries them; a minute of clock skew between processes
      const age = (Math.floor(now() / 1000) - issuedAt) * 1000;
      if (age > ttl || age < -60_000) return false;
      const expected = mac(purpose, binding, fields, issuedAt);
      const given = Buffer.from(match[2]!, 'base64url');
      return given.length === expected.length && timingSafeEqual(given, expected);
    },
  };
}

/** Options shared by the endpoints that serve HTML forms. */
export interface FormPageOptions {
  /** Pages to use instead of portico's defaults ({@link defaultPages}), each one optional. */
  pages?: Partial<OAuthPages>;
  /**
   * The key of the forms' tokens (see {@link FormTokenOptions.key}); share one between
   * processes that serve the same issuer.
   * @defaultValue 32 random bytes, new at each start
   */
  formKey?: string | Uint8Array;
  /**
   * How long a rendered form stays valid, in milliseconds (at least `1_000`).
   * @defaultValue `900_000` (15 minutes)
   */
  formTtl?: Duration;
}

/** What an endpoint that serves forms shares between its steps, built once by its factory. */
export interface FormEndpoint {
  readonly ctx: OAuthContext;
  /** The page renderers, the defaults with the options' replacements. */
  readonly pages: OAuthPages;
  /** The tokens that seal the endpoint's forms. */
  readonly tokens: FormTokens;
  /** The language of this request's pages (see {@link inPageLanguage}). @defaultValue `'en'` */
  readonly language?: PageLanguage;
  /** True when the request's `ui_locales` chose `language` (the forms then carry it on). */
  readonly fromUiLocales?: boolean;
}

/**
 * The endpoint for one request, its pages in the language of the request's `ui_locales`
 * (from its query or form), else of its `Accept-Language`.
 */
export function inPageLanguage<T extends FormEndpoint>(
  endpoint: T,
  req: IncomingMessage,
  params?: URLSearchParams,
): T {
  const uiLocales = params === undefined ? undefined : singleValue(params, 'ui_locales');
  const chosen = choosePageLanguage(req.headers['accept-language'], uiLocales);
  return { ...endpoint, ...chosen };
}

/** The hidden input that carries the language `ui_locales` chose to the next page. */
export function languageField(endpoint: FormEndpoint): FormFields {
  return endpoint.fromUiLocales === true && endpoint.language !== undefined
    ? [['ui_locales', endpoint.language]]
    : [];
}

/** The pages and form tokens of an endpoint's {@link FormPageOptions}, checked. */
export function createFormEndpoint(
  owner: string,
  ctx: OAuthContext,
  options: FormPageOptions,
): FormEndpoint {
  const pages = resolvePages(owner, options.pages);
  const tokens = createFormTokens(owner, { key: options.formKey, ttl: options.formTtl });
  return { ctx, pages, tokens };
}

/** The page renderers: the defaults with the given replacements. */
export function resolvePages(owner: string, pages: Partial<OAuthPages> | undefined): OAuthPages {
  if (pages === undefined) return defaultPages;
  if (typeof pages !== 'object' || pages === null) {
    throw invalidOption(`${owner}: \`pages\` must be an object of render functions`);
  }
  const resolved: OAuthPages = { ...defaultPages };
  for (const [name, render] of Object.entries(pages)) {
    if (!(name in defaultPages)) {
      throw invalidOption(
        `${owner}: unknown page \`${name}\`; pages are ${Object.keys(defaultPages).join(', ')}`,
      );
    }
    if (render === undefined) continue;
    if (typeof render !== 'function') {
      throw invalidOption(`${owner}: \`pages.${name}\` must be a function returning HTML`);
    }
    (resolved as unknown as Record<string, unknown>)[name] = render;
  }
  return Object.freeze(resolved);
}

/** Largest form body the pages accept. */
const PAGE_FORM_LIMIT = 64 * 1024;

/** Reads a page's form post, or the client error that prevented it (to show as a page). */
export async function readPageForm(req: IncomingMessage): Promise<URLSearchParams | HttpError> {
  try {
    return await readForm(req, { limit: PAGE_FORM_LIMIT });
  } catch (err) {
    if (err instanceof HttpError && err.status < 500) return err;
    throw err;
  }
}

/**
 * The headers a page answering a refused form must keep from the body error:
 * `Accept-Encoding: identity` after a content coding (RFC 7694 §3), `Connection: close` after
 * a body too large.
 */
export function bodyErrorHeaders(error: HttpError): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(error.headers)) {
    headers[name] = typeof value === 'string' ? value : value.join(', ');
  }
  return headers;
}

/**
 * A form posted to a page with a sign-in form and a decision form: which one it is
 * (`username`/`password`, or `decision`), `neither` (not one of the page's forms: at
 * `/authorize`, an authorization request sent by POST), `mixed` when it is both, or the
 * body's refusal (415, 413, 400) with the headers its page must keep.
 */
export type PostedPageForm =
  | { kind: 'sign-in' | 'decision' | 'neither'; form: URLSearchParams }
  | { kind: 'mixed' }
  | { kind: 'refused'; status: number; detail: string; headers: Record<string, string> };

/** Reads a form posted to a sign-in-then-decision page and says which form it is. */
export async function readPostedPageForm(req: IncomingMessage): Promise<PostedPageForm> {
  const form = await readPageForm(req);
  if (!(form instanceof URLSearchParams)) {
    return {
      kind: 'refused',
      status: form.status,
      detail: form.detail,
      headers: bodyErrorHeaders(form),
    };
  }
  const signingIn = form.has('username') || form.has('password');
  const deciding = form.has('decision');
  if (signingIn && deciding) return { kind: 'mixed' };
  return { kind: signingIn ? 'sign-in' : deciding ? 'decision' : 'neither', form };
}

/** The value of `name` when the form carries it exactly once, non-empty. */
export function singleValue(form: URLSearchParams, name: string): string | undefined {
  const values = form.getAll(name);
  return values.length === 1 && values[0] !== '' ? values[0] : undefined;
}

/** What a consent or device form token is bound to: the session it was shown in. */
export function sessionBinding(session: SessionRecord): string {
  return `session\n${session.sub}\n${session.createdAt}`;
}
