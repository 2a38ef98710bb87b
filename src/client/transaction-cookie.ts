// The cookie that holds a sign-in transaction (sealed) between the redirect to the provider and
// the callback: HttpOnly, SameSite=Lax (the provider's redirect back is a cross-site top-level
// GET, which Lax lets through and Strict would not), Secure, short-lived.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parse as parseCookie, parseSetCookie, serialize } from 'cookie';
import { invalidOption } from '../internal/options.js';

export class TransactionCookie {
  readonly #name: string;
  readonly #line: (value: string, maxAge: number) => string;
  readonly #maxAge: number;

  constructor(
    owner: string,
    options: { name?: string; secure?: boolean } | undefined,
    lifetimeMs: number,
  ) {
    if (options !== undefined && (typeof options !== 'object' || options === null)) {
      throw invalidOption(`${owner}: \`cookie\` must be an object`);
    }
    const secure = options?.secure ?? true;
    if (typeof secure !== 'boolean')
      throw invalidOption(`${owner}: \`cookie.secure\` must be a boolean`);
    const name = options?.name ?? (secure ? '__Host-portico-sign-in' : 'portico-sign-in');
    if (typeof name !== 'string' || !/^[\w!#$%&'*+.^`|~-]+$/.test(name)) {
      throw invalidOption(`${owner}: \`cookie.name\` must be a cookie name`);
    }
    const lower = name.toLowerCase();
    if ((lower.startsWith('__host-') || lower.startsWith('__secure-')) && !secure) {
      throw invalidOption(`${owner}: a cookie named ${name} needs \`cookie.secure\``);
    }
    this.#name = name;
    this.#maxAge = Math.ceil(lifetimeMs / 1000);
    this.#line = (value, maxAge) =>
      serialize(name, value, { httpOnly: true, secure, sameSite: 'lax', path: '/', maxAge });
  }

  /** The sealed transaction the request carries, if any. */
  read(req: IncomingMessage): string | undefined {
    const header = req.headers.cookie;
    if (header === undefined || header === '') return undefined;
    try {
      return parseCookie(header)[this.#name] || undefined;
    } catch {
      return undefined;
    }
  }

  set(res: ServerResponse, sealed: string): void {
    this.#write(res, this.#line(sealed, this.#maxAge));
  }

  clear(res: ServerResponse): void {
    this.#write(res, this.#line('', 0));
  }

  /** Sets our cookie line, replacing an earlier one of ours and keeping any other. */
  #write(res: ServerResponse, line: string): void {
    const existing = res.getHeader('Set-Cookie');
    const lines =
      existing === undefined ? [] : Array.isArray(existing) ? existing : [String(existing)];
    const kept = lines.filter((other) => parseSetCookie(other).name !== this.#name);
    res.setHeader('Set-Cookie', [...kept, line]);
  }
}
