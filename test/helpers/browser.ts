import type { IncomingHttpHeaders } from 'node:http';
import { parseSetCookie } from 'cookie';
import { expect } from 'vitest';

const ENTITIES: Record<string, string> = {
  '&amp;': '&',
  '&quot;': '"',
  '&#39;': "'",
  '&lt;': '<',
  '&gt;': '>',
};

/** Undoes the HTML escaping of an attribute value. */
export function decodeEntities(text: string): string {
  return text.replace(/&(?:amp|quot|#39|lt|gt);/g, (entity) => ENTITIES[entity]!);
}

/** The hidden inputs of a page's forms, as a browser would send them (any attribute order). */
export function hiddenInputs(html: string): [string, string][] {
  const fields: [string, string][] = [];
  for (const tag of html.match(/<input[^>]*>/gi) ?? []) {
    if (!/type="hidden"/i.test(tag)) continue;
    const name = /name="([^"]*)"/i.exec(tag)?.[1];
    const value = /value="([^"]*)"/i.exec(tag)?.[1] ?? '';
    if (name) fields.push([decodeEntities(name), decodeEntities(value)]);
  }
  return fields;
}

/** `name=value` of the session cookie an answer sets, if it sets one. */
export function sessionCookie(headers: IncomingHttpHeaders, name = 'session'): string | undefined {
  const cookie = (headers['set-cookie'] ?? [])
    .map((line) => parseSetCookie(line))
    .find((c) => c.name === name);
  return cookie === undefined ? undefined : `${cookie.name}=${cookie.value}`;
}

/** A browser for HTML pages at one origin: a cookie jar, redirects not followed, `Origin` sent. */
export class Browser {
  readonly cookies = new Map<string, string>();

  constructor(readonly origin: string) {}

  async fetch(url: string | URL, init: RequestInit = {}): Promise<Response> {
    const cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const res = await fetch(url, {
      ...init,
      redirect: 'manual',
      headers: {
        ...(init.headers as Record<string, string>),
        ...(cookie ? { Cookie: cookie } : {}),
        Origin: this.origin,
      },
    });
    for (const line of res.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const eq = pair.indexOf('=');
      const value = pair.slice(eq + 1);
      if (value === '' || /Max-Age=0/i.test(line)) this.cookies.delete(pair.slice(0, eq));
      else this.cookies.set(pair.slice(0, eq), value);
    }
    return res;
  }

  /** Submits the page's form (to its `action`, else `url`): its hidden inputs and `fields`. */
  async submit(
    page: Response,
    fields: Record<string, string>,
    url: string | URL,
  ): Promise<Response> {
    const html = await page.text();
    const body = new URLSearchParams(hiddenInputs(html));
    for (const [k, v] of Object.entries(fields)) body.set(k, v);
    const action = /<form[^>]*action="([^"]*)"/i.exec(html)?.[1];
    return this.fetch(new URL(action ? decodeEntities(action) : url, url), {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body,
    });
  }
}

/**
 * A user signing in at the authorization endpoint `target` of the server at `origin`, then
 * approving its consent page (there is none when the user's consent to the client is
 * remembered): the Location of the redirect back to the client.
 */
export async function signInAndApprove(
  origin: string,
  target: URL,
  user = 'alice',
): Promise<string> {
  const browser = new Browser(origin);
  const signInPage = await browser.fetch(target);
  expect(signInPage.status).toBe(200);
  expect(signInPage.headers.get('content-type')).toMatch(/^text\/html/);
  const afterSignIn = await browser.submit(
    signInPage,
    { username: user, password: `${user}-password` },
    target.href,
  );
  const next = afterSignIn.headers.get('location');
  if (next !== null && new URL(next, target).origin !== new URL(origin).origin) return next;
  const consentPage = next !== null ? await browser.fetch(new URL(next, target)) : afterSignIn;
  expect(consentPage.status).toBe(200);
  const decided = await browser.submit(
    consentPage,
    { decision: 'approve' },
    consentPage.url || target.href,
  );
  expect([302, 303]).toContain(decided.status);
  return decided.headers.get('location')!;
}
