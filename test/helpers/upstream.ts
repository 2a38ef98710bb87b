// An upstream OpenID Provider for the relying-party tests: panva's oidc-provider on 127.0.0.1
// (discovery, code + PKCE, refresh, RP-initiated logout, dev interactions for the sign-in),
// and a browser that keeps cookies per origin and walks a sign-in through it.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider, { type ClientMetadata } from 'oidc-provider';

export interface Upstream {
  issuer: string;
  /** The provider, once {@link Upstream.configure} (or `startUpstream(clients)`) made it. */
  provider: Provider | undefined;
  /** Makes the provider with `clients` (when they must name a port known only later). */
  configure(clients: ClientMetadata[]): Provider;
  /** Requests the provider received, by path (`/token`, `/jwks`, …). */
  hits: Map<string, number>;
  close(): Promise<void>;
}

/** The accounts of the upstream provider: any login signs in, as that account. */
const claimsOf = (sub: string) => ({
  sub,
  name: `${sub[0]?.toUpperCase()}${sub.slice(1)} Upstream`,
  email: `${sub}@upstream.test`,
  email_verified: true,
});

function makeProvider(issuer: string, clients: ClientMetadata[], accessTokenTtl = 600): Provider {
  const provider = new Provider(issuer, {
    clients,
    findAccount: (_ctx, sub) => ({ accountId: sub, claims: () => claimsOf(sub) }),
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    cookies: { keys: ['upstream-test-cookie-key-0123456789abcdef'] },
    features: {
      devInteractions: { enabled: true },
      rpInitiatedLogout: { enabled: true },
      revocation: { enabled: true },
    },
    // consent is given once and for all: the sign-in goes straight back to the client
    async loadExistingGrant(ctx) {
      const grant = new ctx.oidc.provider.Grant({
        clientId: ctx.oidc.client!.clientId,
        accountId: ctx.oidc.session!.accountId!,
      });
      grant.addOIDCScope('openid email profile offline_access');
      await grant.save();
      return grant;
    },
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    pkce: { required: () => true },
    ttl: {
      AccessToken: accessTokenTtl,
      IdToken: 600,
      Interaction: 600,
      Session: 3600,
      Grant: 3600,
    },
  });
  provider.on('server_error', () => {});
  return provider;
}

/**
 * Starts oidc-provider on 127.0.0.1 with `clients`, consent remembered (no consent page); without
 * `clients`, it listens at once and is made by `configure()` (for redirect URIs of a port not
 * known yet).
 */
export async function startUpstream(
  clients?: ClientMetadata[],
  options: { accessTokenTtl?: number } = {},
): Promise<Upstream> {
  const hits = new Map<string, number>();
  let handler: ((req: never, res: never) => void) | undefined;
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    hits.set(path, (hits.get(path) ?? 0) + 1);
    if (handler === undefined) {
      res.writeHead(503).end();
      return;
    }
    handler(req as never, res as never);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const upstream: Upstream = {
    issuer: `http://127.0.0.1:${port}`,
    provider: undefined,
    configure(list) {
      const provider = makeProvider(upstream.issuer, list, options.accessTokenTtl);
      upstream.provider = provider;
      handler = provider.callback() as never;
      return provider;
    },
    hits,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  if (clients !== undefined) upstream.configure(clients);
  return upstream;
}

/** A browser: cookies per origin (host and port), redirects not followed. */
export class Browser {
  readonly jars = new Map<string, Map<string, string>>();

  /** `route` sends a request for a public URL where it is served (a balancer in front). */
  constructor(readonly route: (url: URL) => URL = (url) => url) {}

  jar(url: URL): Map<string, string> {
    const jar = this.jars.get(url.host) ?? new Map<string, string>();
    this.jars.set(url.host, jar);
    return jar;
  }

  async fetch(
    target: string | URL,
    init: RequestInit & { headers?: Record<string, string> } = {},
  ): Promise<Response> {
    const url = new URL(target);
    const jar = this.jar(url);
    const cookie = [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
    const res = await fetch(this.route(url), {
      ...init,
      redirect: 'manual',
      headers: { ...init.headers, ...(cookie ? { cookie } : {}) },
    });
    for (const line of res.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const eq = pair.indexOf('=');
      const value = pair.slice(eq + 1);
      if (value === '' || /Max-Age=0|expires=Thu, 01 Jan 1970/i.test(line)) {
        jar.delete(pair.slice(0, eq));
      } else jar.set(pair.slice(0, eq), value);
    }
    return res;
  }

  /** Follows redirects from `target` until one leads to `stopAt`'s origin (not fetched). */
  async follow(target: string | URL, stopAt: string): Promise<{ url: URL; res?: Response }> {
    let url = new URL(target);
    for (let hop = 0; hop < 20; hop++) {
      if (url.origin === new URL(stopAt).origin) return { url };
      const res = await this.fetch(url);
      const location = res.headers.get('location');
      if (location === null) return { url, res };
      url = new URL(location, url);
    }
    throw new Error('too many redirects');
  }
}

/**
 * Walks a sign-in: `start` (the app's `/login/{name}`) to the provider, signs in there as
 * `login` with the dev interaction form, and answers the URL the provider sends the browser
 * back to (the app's callback, not fetched).
 */
export async function signInUpstream(
  browser: Browser,
  start: string,
  upstream: Upstream,
  login = 'alice',
): Promise<URL> {
  const first = await browser.fetch(start);
  const location = first.headers.get('location');
  if (location === null) throw new Error(`no redirect from ${start}: ${first.status}`);
  const appOrigin = new URL(start).origin;
  let at = await browser.follow(new URL(location, start), appOrigin);
  for (let round = 0; round < 3 && at.res !== undefined; round++) {
    const html = await at.res.text();
    const action = /action="([^"]+)"/.exec(html)?.[1];
    const prompt = /name="prompt" value="([^"]+)"/.exec(html)?.[1];
    if (action === undefined || prompt === undefined) {
      throw new Error(`unexpected page at the provider (${at.res.status}): ${html.slice(0, 300)}`);
    }
    const posted = await browser.fetch(new URL(action, at.url), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ prompt, login, password: 'any' }).toString(),
    });
    const next = posted.headers.get('location');
    if (next === null) throw new Error(`the provider answered ${posted.status} to the ${prompt}`);
    at = await browser.follow(new URL(next, at.url), appOrigin);
  }
  if (at.url.origin !== appOrigin) throw new Error(`the sign-in ended at ${at.url.href}`);
  return at.url;
}
