import type { ServerOptions } from 'node:https';
import type { SecureContextOptions } from 'node:tls';
import type { Middleware } from '../core/compose.js';
import { badRequest, forbidden } from '../core/errors/errors.js';
import { sendRedirect } from '../core/send.js';
import { asksForWebSocket } from '../internal/headers.js';
import { assertKnownOptions, invalidOption } from '../internal/options.js';
import { splitTarget } from '../internal/target.js';
import { createProxyTrust, type TrustProxy } from './proxy.js';

/**
 * The cipher suites {@link tlsServerOptions} allows: node's TLS 1.3 suites, and for TLS 1.2
 * only forward-secret AEAD suites (ECDHE with AES-GCM or ChaCha20-Poly1305), as BCP 195
 * recommends.
 *
 * @example
 * ```ts
 * tls.connect({ host, port, ciphers: MODERN_CIPHERS, minVersion: 'TLSv1.2' });
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9325#section-4.2 | RFC 9325 §4.2}
 */
export const MODERN_CIPHERS: string = [
  'TLS_AES_256_GCM_SHA384',
  'TLS_CHACHA20_POLY1305_SHA256',
  'TLS_AES_128_GCM_SHA256',
  'ECDHE-ECDSA-AES128-GCM-SHA256',
  'ECDHE-RSA-AES128-GCM-SHA256',
  'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305',
  'ECDHE-RSA-CHACHA20-POLY1305',
].join(':');

/** Options of {@link tlsServerOptions}. */
export interface TlsServerInput {
  /** The server's certificate chain, PEM. */
  cert: SecureContextOptions['cert'];
  /** The server's private key, PEM. */
  key: SecureContextOptions['key'];
  /** Passphrase of an encrypted `key`. */
  passphrase?: string;
  /**
   * CAs whose client certificates the server accepts (mutual TLS). Giving them turns
   * `requestCert` on.
   */
  ca?: SecureContextOptions['ca'];
  /**
   * Ask clients for a certificate. The handshake never fails for want of a valid one
   * (`rejectUnauthorized: false`): each route decides, from `req.socket.authorized`.
   * @defaultValue `true` when `ca` is given, else `false`
   */
  requestCert?: boolean;
  /** Certificate revocation lists for client certificates (PEM). @defaultValue none */
  crl?: SecureContextOptions['crl'];
}

/**
 * Builds `https.createServer` options with TLS 1.2 as the minimum, forward-secret AEAD
 * ciphers and the server's cipher order. With `ca`, client certificates are requested but
 * not required, so one server can serve both mutual-TLS routes and the rest. Returns a new
 * object; spread it to add other options.
 *
 * @example
 * ```ts
 * const server = https.createServer(
 *   tlsServerOptions({ cert: readFileSync('server.pem'), key: readFileSync('server.key') }),
 *   toNodeListener(app),
 * );
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc8446 | RFC 8446} (TLS 1.3)
 * @see {@link https://www.rfc-editor.org/info/bcp195 | BCP 195} (RFC 9325, secure use of TLS)
 */
export function tlsServerOptions(input: TlsServerInput): ServerOptions {
  assertKnownOptions('tlsServerOptions()', input, [
    'cert',
    'key',
    'passphrase',
    'ca',
    'requestCert',
    'crl',
  ] as const satisfies readonly (keyof TlsServerInput)[]);
  if (input === undefined || input === null)
    throw invalidOption('tlsServerOptions(): options are required');
  if (input.cert === undefined || input.key === undefined) {
    throw invalidOption('tlsServerOptions(): `cert` and `key` are required');
  }
  if (input.requestCert !== undefined && typeof input.requestCert !== 'boolean') {
    throw invalidOption('tlsServerOptions(): `requestCert` must be a boolean');
  }
  const options: ServerOptions = {
    cert: input.cert,
    key: input.key,
    minVersion: 'TLSv1.2',
    ciphers: MODERN_CIPHERS,
    honorCipherOrder: true,
  };
  if (input.passphrase !== undefined) options.passphrase = input.passphrase;
  if (input.ca !== undefined) options.ca = input.ca;
  if (input.crl !== undefined) options.crl = input.crl;
  if (input.requestCert ?? input.ca !== undefined) {
    options.requestCert = true;
    options.rejectUnauthorized = false;
  }
  return options;
}

/**
 * Options of {@link requireHttps}.
 *
 * @example
 * ```ts
 * const options: RequireHttpsOptions = { trustProxy: 1, origin: 'https://api.example.com' };
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc6797#section-7.2 | RFC 6797 §7.2}
 */
export interface RequireHttpsOptions {
  /**
   * Which proxies may say the request came over HTTPS (`X-Forwarded-Proto`).
   * @defaultValue `false` (only the server's own TLS counts)
   */
  trustProxy?: TrustProxy;
  /**
   * The HTTPS port to redirect to. A number: the port of the `Host` header belongs to plain
   * HTTP and is dropped. `'same'`: the redirect is the same URL with only the scheme changed
   * (the `Host` header's port is kept, as when a proxy serves https on the port clients
   * used), except an explicit `:80`, plain HTTP's default, which is dropped. Ignored for the
   * host when `origin` is set (the origin's port wins); giving both is refused unless `port`
   * is the origin's own port.
   * @defaultValue `443`
   */
  port?: number | 'same';
  /**
   * The `https:` origin every redirect goes to (`'https://api.example.com'`, a port allowed,
   * no path): the `Location` is this origin plus the request's path and query, and the
   * request's `Host` header is never read. The safe setting behind a shared cache or CDN,
   * where a poisoned `Host` would otherwise make a cached redirect point elsewhere.
   * @defaultValue none (the redirect is built from the validated `Host` header)
   */
  origin?: string;
}

/** A host name, IPv4 address or bracketed IPv6 address, with an optional port. */
const HOST = /^(?:[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])(?::(\d{1,5}))?$/;

/** Whether a `Host` header is a valid host with an optional port 1–65535. */
function isValidHost(host: string): boolean {
  const match = HOST.exec(host);
  if (match === null) return false;
  const port = match[1];
  return port === undefined || (Number(port) >= 1 && Number(port) <= 65_535);
}

/** The `https:` origin of `requireHttps`'s `origin` option, checked: `https://host[:port]`. */
function parseOrigin(origin: unknown, port: number | 'same' | undefined): string {
  let url: URL | undefined;
  try {
    url = typeof origin === 'string' ? new URL(origin) : undefined;
  } catch {
    url = undefined;
  }
  if (
    url === undefined ||
    url.protocol !== 'https:' ||
    url.username !== '' ||
    url.password !== '' ||
    url.pathname !== '/' ||
    url.search !== '' ||
    url.hash !== '' ||
    !/^https:\/\/[^/?#]+\/?$/i.test(origin as string)
  ) {
    throw invalidOption(
      "requireHttps(): `origin` must be an https origin without a path ('https://api.example.com')",
    );
  }
  const originPort = url.port === '' ? 443 : Number(url.port);
  if (port !== undefined && port !== originPort) {
    throw invalidOption(
      `requireHttps(): \`port\` (${String(port)}) conflicts with the port of \`origin\` (${originPort})`,
    );
  }
  return url.origin;
}

/** The request target's path and query, from origin form (`/a?b`) or absolute form. */
function pathOf(url: string): string | undefined {
  if (url === '*') return '/';
  const { path, search } = splitTarget(url);
  return path.startsWith('/') ? path + search : undefined;
}

/** The redirect's scheme, host and port, from the validated `Host` header. */
function hostOrigin(host: string, portSuffix: string | undefined): string {
  const name = host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.split(':')[0]!;
  const hostPort = host.slice(name.length); // '' or ':<port>'
  return `https://${name}${portSuffix ?? (hostPort === ':80' ? '' : hostPort)}`;
}

const invalidTarget = () =>
  badRequest('The Host header or request target is invalid.', { code: 'ERR_INVALID_HOST' });

/**
 * Lets requests that came over HTTPS (own TLS, or a trusted proxy's
 * `X-Forwarded-Proto: https`) through. Others get a `308` to the same URL over https for
 * GET and HEAD (with `Cache-Control: no-store`, so no cache keeps it), and a 403 problem for
 * every other method (redirecting a POST would send its body in the clear a second time) and
 * for a WebSocket handshake (put it in `createUpgradeHandler`'s `middleware`: its client would
 * not follow a redirect).
 *
 * Give `origin` behind a cache or CDN: the redirect then goes to that origin, whatever the
 * `Host` header says. Without it, the redirect is built from the `Host` header, which is
 * checked strictly: one that is not a plain host name, IPv4 or bracketed IPv6 address (with
 * an optional port) gets a 400 problem, so the redirect never points at another path.
 *
 * @example
 * ```ts
 * // behind one load balancer that terminates TLS, and a CDN: redirect to the one origin
 * const app = compose([
 *   requireHttps({ trustProxy: 1, origin: 'https://api.example.com' }),
 *   securityHeaders({ trustProxy: 1 }),
 *   routes,
 * ]);
 * // the proxy serves https on the port clients used: only the scheme changes
 * requireHttps({ trustProxy: 1, port: 'same' });
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc9110#section-15.4.9 | RFC 9110 §15.4.9} (308)
 * @see {@link https://www.rfc-editor.org/rfc/rfc6797#section-7.2 | RFC 6797 §7.2}
 */
export function requireHttps(options: RequireHttpsOptions = {}): Middleware {
  assertKnownOptions('requireHttps()', options, [
    'trustProxy',
    'port',
    'origin',
  ] as const satisfies readonly (keyof RequireHttpsOptions)[]);
  const trust = createProxyTrust(options?.trustProxy ?? false);
  const port = options?.port ?? 443;
  if (port !== 'same' && (!Number.isInteger(port) || port < 1 || port > 65_535)) {
    throw invalidOption("requireHttps(): `port` must be an integer 1–65535 or 'same'");
  }
  const origin =
    options?.origin === undefined ? undefined : parseOrigin(options.origin, options.port);
  // the port the redirect names; undefined: the Host header's (`'same'`)
  const portSuffix = port === 'same' ? undefined : port === 443 ? '' : `:${port}`;

  return function requireHttpsMiddleware(req, res, next) {
    if (trust.isSecure(req)) return next();
    const method = req.method ?? 'GET';
    // a WebSocket handshake (as createUpgradeHandler's `middleware`) is refused, not
    // redirected: its client would not follow, and its credentials must not travel again
    if ((method !== 'GET' && method !== 'HEAD') || asksForWebSocket(req)) {
      throw forbidden('This resource must be accessed over HTTPS.', {
        code: 'ERR_HTTPS_REQUIRED',
        typeSlug: 'https-required',
        title: 'HTTPS required',
      });
    }
    const path = pathOf(req.url ?? '/');
    if (path === undefined) throw invalidTarget();
    let base = origin;
    if (base === undefined) {
      const host = req.headers.host ?? '';
      if (!isValidHost(host)) throw invalidTarget();
      base = hostOrigin(host, portSuffix);
    }
    res.setHeader('Cache-Control', 'no-store');
    sendRedirect(res, 308, `${base}${path}`);
  };
}
