// How a redirect URI of a request is compared with the client's registered ones: exactly,
// except that a registered loopback URI without a port matches any port (RFC 8252 §7.3), and
// which shapes a redirect URI may have at registration (RFC 8252 §7.1–7.3, RFC 7591 §2).

/** The loopback hosts of RFC 8252 §7.3 (`localhost` too, as MCP clients use it). */
const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

/**
 * The parts of a loopback `http:` URI written without a port: its text without the
 * authority's host, so that `requested` can be matched on everything else exactly.
 */
function loopbackParts(uri: string): { host: string; rest: string; port: string } | undefined {
  // the authority as written: the URL parser would drop a default port (`:80`)
  const match = /^http:\/\/(\[::1\]|127\.0\.0\.1|localhost)(?::([0-9]{1,5}))?(\/[^#]*)?$/i.exec(
    uri,
  );
  if (match === null) return undefined;
  const [, host, port, rest] = match;
  if (!URL.canParse(uri)) return undefined;
  return { host: host!.toLowerCase(), port: port ?? '', rest: rest ?? '' };
}

/**
 * Whether the `requested` redirect URI of an authorization request matches the `registered`
 * one: the same string exactly (RFC 6749 §3.1.2.3, RFC 9700 §4.1.3), or, for a registered
 * `http://127.0.0.1/…`, `http://[::1]/…` or `http://localhost/…` written **without a port**,
 * the same URI with any port (RFC 8252 §7.3: a native app listens on a port the system picks);
 * scheme, host, path and query still compare exactly. A registered loopback URI with a port
 * matches only that port.
 *
 * @example
 * ```ts
 * redirectUriMatches('http://127.0.0.1/cb', 'http://127.0.0.1:53219/cb'); // true
 * redirectUriMatches('http://127.0.0.1:8080/cb', 'http://127.0.0.1:9090/cb'); // false
 * redirectUriMatches('https://app.example/cb', 'https://app.example/cb?x=1'); // false
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc8252#section-7.3 | RFC 8252 §7.3}
 */
export function redirectUriMatches(registered: string, requested: string): boolean {
  if (registered === requested) return true;
  const fixed = loopbackParts(registered);
  if (fixed === undefined || fixed.port !== '' || !LOOPBACK_HOSTS.has(fixed.host)) return false;
  const given = loopbackParts(requested);
  return (
    given !== undefined &&
    given.port !== '' &&
    Number(given.port) <= 65_535 &&
    given.host === fixed.host &&
    // the host's case aside (the parser lowers it), the rest as written
    given.rest === fixed.rest &&
    requested.slice(0, 7).toLowerCase() === 'http://'
  );
}

/**
 * The registered redirect URI of `redirectUris` that `requested` matches
 * ({@link redirectUriMatches}), or `undefined`.
 *
 * @example
 * ```ts
 * if (findRedirectUri(client.redirectUris, uri) === undefined) throw new OAuthError(…);
 * ```
 */
export function findRedirectUri(
  redirectUris: readonly string[],
  requested: string,
): string | undefined {
  return redirectUris.find((registered) => redirectUriMatches(registered, requested));
}

/** Schemes that are never a redirect URI: they run or embed content in the browser. */
const DANGEROUS_SCHEMES = new Set([
  'javascript:',
  'data:',
  'vbscript:',
  'file:',
  'blob:',
  'about:',
  'filesystem:',
  'view-source:',
  'ws:',
  'wss:',
  'ftp:',
  'mailto:',
  'tel:',
]);

/** The shapes of redirect URI a dynamically registered client may give. */
export type RedirectUriShape = 'https' | 'loopback' | 'private-use';

/**
 * Why `uri` cannot be a registered redirect URI of the allowed `shapes`, or `undefined` when
 * it can: `https:` with a host; `http:` on `127.0.0.1`, `[::1]` or `localhost` (RFC 8252
 * §7.3); a private-use scheme with a dot in it, such as `com.example.app:/cb` (RFC 8252 §7.1);
 * never a fragment, credentials in the authority, nor a scheme that runs or embeds content
 * (`javascript:`, `data:`, …).
 *
 * @example
 * ```ts
 * redirectUriRefusal('javascript:alert(1)', ['https', 'loopback', 'private-use']);
 * // 'a javascript: redirect URI is never allowed'
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc8252#section-7 | RFC 8252 §7}
 */
export function redirectUriRefusal(
  uri: unknown,
  shapes: readonly RedirectUriShape[],
): string | undefined {
  if (typeof uri !== 'string' || uri === '' || uri.length > 2000) {
    return 'each redirect URI must be a string of 1 to 2000 characters';
  }
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it refuses
  if (/[\s\x00-\x1f\x7f]/.test(uri)) return 'a redirect URI must not hold spaces or controls';
  if (uri.includes('#')) return 'a redirect URI must not have a fragment';
  if (!URL.canParse(uri)) return `${JSON.stringify(uri)} is not an absolute URI`;
  const url = new URL(uri);
  const scheme = url.protocol.toLowerCase();
  if (DANGEROUS_SCHEMES.has(scheme)) return `a ${scheme} redirect URI is never allowed`;
  if (url.username !== '' || url.password !== '') {
    return 'a redirect URI must not carry credentials';
  }
  if (scheme === 'https:') {
    return shapes.includes('https') && url.hostname !== ''
      ? undefined
      : 'https redirect URIs are not allowed here';
  }
  if (scheme === 'http:') {
    if (!LOOPBACK_HOSTS.has(url.hostname.toLowerCase())) {
      return 'an http redirect URI must be on 127.0.0.1, [::1] or localhost (RFC 8252 §7.3)';
    }
    return shapes.includes('loopback') ? undefined : 'loopback redirect URIs are not allowed here';
  }
  // RFC 8252 §7.1: a reverse domain name the app controls, such as com.example.app
  if (!/^[a-z][a-z0-9+-]*(\.[a-z0-9+-]+)+:$/.test(scheme)) {
    return `the scheme of ${JSON.stringify(uri)} is neither https, loopback http, nor a private-use scheme such as com.example.app: (RFC 8252 §7.1)`;
  }
  if (url.host !== '') {
    return 'a private-use redirect URI has no authority: write it `com.example.app:/cb`';
  }
  return shapes.includes('private-use')
    ? undefined
    : 'private-use scheme redirect URIs are not allowed here';
}
