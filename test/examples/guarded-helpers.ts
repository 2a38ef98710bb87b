// Helpers of the reference-server-guarded-* suites (issue 17): OAuth flows driven as a browser
// and a client would, a client address per test (X-Forwarded-For behind TRUST_PROXY=1), refused
// WebSocket handshakes, close reasons, and access tokens minted with the server's SIGNING_KEY.
import { createHash, generateKeyPairSync, type KeyObject, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type JWTPayload, SignJWT } from 'jose';
import { expect } from 'vitest';
import WebSocket from 'ws';
import { Browser, hiddenInputs } from '../helpers/browser.js';
import { type Client, connect as connectEvents } from '../helpers/sse.js';
import { type LiveSocket, openSocket, within } from './live-clients.js';

export const JSON_TYPE = { 'Content-Type': 'application/json' };
export const FORM_TYPE = { 'Content-Type': 'application/x-www-form-urlencoded' };

/** `Authorization: Basic …` of `user` and `password`. */
export const basic = (user: string, password: string) =>
  `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

/** A demo client of the contract. */
export interface DemoClient {
  id: string;
  secret?: string;
  redirectUri: string;
}

export const WEB: DemoClient = {
  id: 'demo-web',
  secret: 'demo-web-secret',
  redirectUri: 'http://127.0.0.1:8080/callback',
};
export const SPA: DemoClient = { id: 'demo-spa', redirectUri: 'http://127.0.0.1:5173/callback' };
export const SERVICE: DemoClient = {
  id: 'demo-service',
  secret: 'demo-service-secret',
  redirectUri: '',
};

/** A PKCE verifier and its S256 challenge. */
export function pkcePair(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** `/authorize?response_type=code&client_id=…&redirect_uri=…` with `params` added. */
export function authorizeUrl(
  baseUrl: string,
  client: DemoClient,
  params: Record<string, string>,
): URL {
  const url = new URL(`${baseUrl}/authorize`);
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('client_id', client.id);
  url.searchParams.set('redirect_uri', client.redirectUri);
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  return url;
}

/** A {@link Browser} whose every request also carries `headers` (e.g. its X-Forwarded-For). */
export class ClientBrowser extends Browser {
  constructor(
    origin: string,
    readonly extra: Record<string, string> = {},
  ) {
    super(origin);
  }

  override fetch(url: string | URL, init: RequestInit = {}): Promise<Response> {
    return super.fetch(url, {
      ...init,
      headers: { ...(init.headers as Record<string, string>), ...this.extra },
    });
  }
}

/** The headers of a client at `ip` behind TRUST_PROXY=1 (documentation ranges, RFC 5737). */
export const from = (ip: string) => ({ 'X-Forwarded-For': ip });

const isRedirect = (res: Response) => res.status >= 300 && res.status < 400;

/**
 * Follows an authorization request as `user` would: signs in on the sign-in form, approves the
 * consent form (when one is shown), and resolves with the redirect to the client's
 * `redirect_uri` (a code, or an error). Copied and generalised from the private
 * `signInAndApprove` of reference-server-oauth.test.ts.
 */
export async function throughAuthorize(
  browser: Browser,
  url: URL,
  client: DemoClient,
  user = 'alice',
): Promise<URL> {
  let res = await browser.fetch(url);
  let at: string | URL = url;
  for (let step = 0; step < 8; step++) {
    if (isRedirect(res)) {
      const location: URL = new URL(res.headers.get('location') ?? '', at);
      if (location.href.startsWith(client.redirectUri)) return location;
      at = location;
      res = await browser.fetch(location);
      continue;
    }
    const html = await res.clone().text();
    if (res.status !== 200) throw new Error(`/authorize answered ${res.status}: ${html}`);
    const base = res.url || at;
    if (/name="password"/.test(html)) {
      res = await browser.submit(res, { username: user, password: `${user}-password` }, base);
    } else if (/name="decision"/.test(html)) {
      res = await browser.submit(res, { decision: 'approve' }, base);
    } else {
      throw new Error(`/authorize showed neither a sign-in nor a consent form: ${html}`);
    }
  }
  throw new Error('/authorize did not redirect to the client within 8 steps');
}

/** A POST to the token endpoint (or `path`) as `client`: Basic for confidential ones. */
export function asClient(
  baseUrl: string,
  client: DemoClient,
  fields: Record<string, string>,
  options: { path?: string; secret?: string; headers?: Record<string, string> } = {},
): Promise<Response> {
  const secret = options.secret ?? client.secret;
  const body = new URLSearchParams(fields);
  const headers: Record<string, string> = { ...FORM_TYPE, ...options.headers };
  if (secret === undefined) body.set('client_id', client.id);
  else headers.Authorization = basic(client.id, secret);
  return fetch(`${baseUrl}${options.path ?? '/token'}`, { method: 'POST', headers, body });
}

/** What the token endpoint issues. */
export interface Tokens {
  access_token: string;
  refresh_token?: string;
  scope?: string;
}

/** Who signs in, and the page origin the browser sends (the service's public one). */
export interface FlowOptions {
  user?: string;
  origin?: string;
  /** The resource indicator of the authorization request (RFC 8707), when one is named. */
  resource?: string;
}

/** A code of `client` for `scope` (PKCE S256), with its verifier; alice unless told. */
export async function codeFor(
  baseUrl: string,
  client: DemoClient,
  scope: string,
  options: FlowOptions = {},
): Promise<{ code: string; verifier: string }> {
  const { verifier, challenge } = pkcePair();
  const url = authorizeUrl(baseUrl, client, {
    scope,
    state: 'st',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    ...(options.resource !== undefined && { resource: options.resource }),
  });
  const browser = new Browser(options.origin ?? baseUrl);
  const back = await throughAuthorize(browser, url, client, options.user);
  const code = back.searchParams.get('code');
  if (code === null) throw new Error(`no code in ${back.href}`);
  return { code, verifier };
}

/** Runs the authorization code flow with PKCE (alice unless told); resolves with the tokens. */
export async function userTokens(
  baseUrl: string,
  client: DemoClient,
  scope: string,
  options: FlowOptions = {},
): Promise<Tokens> {
  const { code, verifier } = await codeFor(baseUrl, client, scope, options);
  const res = await asClient(baseUrl, client, {
    grant_type: 'authorization_code',
    code,
    redirect_uri: client.redirectUri,
    code_verifier: verifier,
  });
  expect(res.status, 'the code exchange').toBe(200);
  return (await res.json()) as Tokens;
}

/** `POST /revoke` of `token` by `client` (RFC 7009); expects 200. */
export async function revokeToken(baseUrl: string, client: DemoClient, token: string) {
  const res = await asClient(baseUrl, client, { token }, { path: '/revoke' });
  expect(res.status, 'the revocation').toBe(200);
}

/** `POST /login` as `user`; resolves with the `session=…` cookie pair. */
export async function signIn(
  baseUrl: string,
  user = 'alice',
  headers: Record<string, string> = {},
): Promise<string> {
  const res = await fetch(`${baseUrl}/login`, {
    method: 'POST',
    headers: { ...JSON_TYPE, ...headers },
    body: JSON.stringify({ username: user, password: `${user}-password` }),
  });
  expect(res.status, 'the sign-in').toBe(204);
  return res.headers.get('set-cookie')!.split(';')[0]!;
}

/** A refused `/ws` handshake: its status, headers and body (copied from reference-server-ws). */
export function refusedUpgrade(
  baseUrl: string,
  headers: Record<string, string>,
): Promise<{ status: number; body: string; headers: IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${baseUrl.replace(/^http/, 'ws')}/ws`, { headers });
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (d: Buffer) => {
        body += d;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
    });
    ws.on('open', () => {
      ws.terminate();
      reject(new Error('the upgrade was accepted'));
    });
    ws.on('error', () => {});
  });
}

/** The close code and reason of `ws` (attach before it can close). */
export function closing(ws: WebSocket): Promise<{ code: number; reason: string }> {
  return new Promise((resolve) =>
    ws.once('close', (code: number, reason: Buffer) => resolve({ code, reason: String(reason) })),
  );
}

/** Waits `ms` milliseconds. */
export const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A 429 problem: `Retry-After` in whole seconds > 0, `application/problem+json`, status 429. */
export async function expectProblem429(res: Response, what: string) {
  if (res.status !== 429) await res.body?.cancel(); // an /events stream that opened
  expect(res.status, what).toBe(429);
  const retryAfter = res.headers.get('retry-after');
  expect(retryAfter, `${what}: Retry-After`).toMatch(/^\d+$/);
  expect(Number(retryAfter)).toBeGreaterThan(0);
  expect(res.headers.get('content-type'), what).toMatch(/^application\/problem\+json/);
  expect(await res.json(), what).toMatchObject({ status: 429 });
}

/** A 429 at an OAuth endpoint: `Retry-After`, and the RFC 6749 §5.2 error format. */
export async function expectOAuth429(res: Response, what: string) {
  expect(res.status, what).toBe(429);
  const retryAfter = res.headers.get('retry-after');
  expect(retryAfter, `${what}: Retry-After`).toMatch(/^\d+$/);
  expect(Number(retryAfter)).toBeGreaterThan(0);
  expect(res.headers.get('content-type'), what).toMatch(/^application\/json/);
  const body = (await res.json()) as { error?: unknown };
  expect(typeof body.error, `${what}: error`).toBe('string');
}

/** A 429 HTML page (the sign-in forms), with `Retry-After`. */
export async function expectHtml429(res: Response, what: string) {
  expect(res.status, what).toBe(429);
  const retryAfter = res.headers.get('retry-after');
  expect(retryAfter, `${what}: Retry-After`).toMatch(/^\d+$/);
  expect(Number(retryAfter)).toBeGreaterThan(0);
  expect(res.headers.get('content-type'), what).toMatch(/^text\/html/);
  await res.body?.cancel();
}

/** An RS256 signing key in a PEM file, for the server's `SIGNING_KEY`. */
export function signingKeyFile(): { path: string; key: KeyObject; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'portico-guarded-'));
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const path = join(dir, 'signing.pem');
  writeFileSync(path, privateKey.export({ type: 'pkcs8', format: 'pem' }));
  return { path, key: privateKey, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * An access token as the server issues them (RS256, `typ: at+jwt`, its `kid`), signed with
 * the key of its `SIGNING_KEY`, for alice through demo-web unless `claims` say otherwise.
 */
export async function mintToken(
  baseUrl: string,
  key: KeyObject,
  claims: JWTPayload,
  expiresAt: number,
): Promise<string> {
  const jwks = (await (await fetch(`${baseUrl}/.well-known/jwks.json`)).json()) as {
    keys: { kid: string }[];
  };
  return new SignJWT({
    name: 'Alice Example',
    role: 'admin',
    scope: 'read:messages',
    client_id: 'demo-web',
    ...claims,
  })
    .setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid: jwks.keys[0]!.kid })
    .setSubject(typeof claims.sub === 'string' ? claims.sub : 'alice')
    .setIssuer(baseUrl)
    .setAudience(baseUrl)
    .setIssuedAt()
    .setExpirationTime(expiresAt)
    .setJti(randomBytes(12).toString('base64url'))
    .sign(key);
}

/** `user` signed in on `/device/verify` of `base`: the browser and the code form's hidden fields. */
export async function deviceCodeForm(base: string, ip: string, origin = base, user = 'bob') {
  const browser = new ClientBrowser(origin, from(ip));
  const verify = `${base}/device/verify`;
  const signInPage = await browser.fetch(verify);
  let page = await browser.submit(
    signInPage,
    { username: user, password: `${user}-password` },
    verify,
  );
  if (page.status === 302 || page.status === 303) {
    page = await browser.fetch(new URL(page.headers.get('location')!, verify));
  }
  expect(page.status, 'the code form').toBe(200);
  return { browser, hidden: hiddenInputs(await page.text()) };
}

/** Where the right code is in a burst of {@link codeAttempts}: the 20th. */
export const RIGHT_AT = 19;

/** 30 bodies of the code form approving a code: 29 wrong codes, `rightCode` at `rightAt`. */
export function codeAttempts(
  hidden: [string, string][],
  rightCode: string,
  rightAt = RIGHT_AT,
): string[] {
  const wrongCode = (i: number) => {
    const letters = String.fromCharCode(66 + (i % 20), 67 + (i % 19), 68 + (i % 18), 70 + (i % 17));
    const code = `${letters}-${letters}`;
    return code === rightCode ? `ZZZZ-${letters}` : code;
  };
  return Array.from({ length: 30 }, (_, i) => {
    const body = new URLSearchParams(hidden);
    body.set('user_code', i === rightAt ? rightCode : wrongCode(i));
    body.set('decision', 'approve');
    return body.toString();
  });
}

/**
 * Signs bob in on `/device/verify` of `bases[0]`, then posts the 30 {@link codeAttempts} at
 * once with fetch (spread over `bases`). Resolves with the statuses, in sending order.
 */
export async function deviceCodeBurst(
  bases: string[],
  rightCode: string,
  ip: string,
  origin = bases[0]!,
): Promise<number[]> {
  const { browser, hidden } = await deviceCodeForm(bases[0]!, ip, origin);
  const answers = await Promise.all(
    codeAttempts(hidden, rightCode).map((body, i) =>
      browser.fetch(`${bases[i % bases.length]}/device/verify`, {
        method: 'POST',
        headers: FORM_TYPE,
        body,
      }),
    ),
  );
  await Promise.all(answers.map((r) => r.body?.cancel()));
  return answers.map((r) => r.status);
}

/**
 * The tightest burst a client can make: each POST of `bodies` on its own connection (spread
 * over `bases`) written but for its last byte, then every last byte at once (in order), so
 * that the server reads them all complete in the same moment. Resolves with the statuses.
 */
export async function releasedBurst(
  bases: string[],
  path: string,
  headers: Record<string, string>,
  bodies: string[],
): Promise<number[]> {
  const sockets = await Promise.all(
    bodies.map(
      (body, i) =>
        new Promise<Socket>((resolve, reject) => {
          const { hostname, port } = new URL(bases[i % bases.length]!);
          const socket = connect(Number(port), hostname, () => resolve(socket));
          socket.once('error', reject);
          const head = Object.entries({
            ...headers,
            Host: `${hostname}:${port}`,
            ...FORM_TYPE,
            'Content-Length': String(Buffer.byteLength(body)),
            Connection: 'close',
          }).map(([name, value]) => `${name}: ${value}\r\n`);
          socket.write(`POST ${path} HTTP/1.1\r\n${head.join('')}\r\n${body.slice(0, -1)}`);
        }),
    ),
  );
  const replies = sockets.map(
    (socket) =>
      new Promise<number>((resolve) => {
        let text = '';
        socket.setEncoding('utf8');
        socket.on('data', (chunk: string) => {
          text += chunk;
        });
        socket.on('error', () => {});
        socket.on('close', () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0)));
      }),
  );
  await pause(200); // every head and body but one byte read and waiting
  for (const [i, body] of bodies.entries()) sockets[i]!.write(body.slice(-1));
  return Promise.all(replies);
}

/** GET `/events` of `baseUrl` with `headers`, read as it comes. */
export const openEvents = (baseUrl: string, headers: Record<string, string>) =>
  connectEvents({ port: Number(new URL(baseUrl).port) }, '/events', {
    Accept: 'text/event-stream',
    ...headers,
  });

/** A /ws connection of `baseUrl` subscribed to `channel` (with positions), and how it closes. */
export async function subscribedSocket(
  baseUrl: string,
  headers: Record<string, string>,
  channel: string,
) {
  const socket = await openSocket(baseUrl, headers);
  const closed = closing(socket.ws);
  socket.ws.send(JSON.stringify({ type: 'subscribe', channel, recover: true }));
  await socket.next('subscribed');
  return { socket, closed };
}

/** An event stream and a subscribed WebSocket opened with one credential. */
export interface Live {
  stream: Client;
  socket: LiveSocket;
  closed: Promise<{ code: number; reason: string }>;
}

/** Posts a message of `text` to `channel` (as a user who may). */
export type Poster = (text: string, channel: string) => Promise<unknown>;

/**
 * Opens both on `baseUrl` with `headers`, and checks that both receive a message posted now
 * (so that a later silence means something).
 */
export async function openLive(
  baseUrl: string,
  headers: Record<string, string>,
  channel: string,
  post: Poster,
): Promise<Live> {
  const stream = await openEvents(baseUrl, headers);
  expect(stream.status, 'the stream opens').toBe(200);
  const { socket, closed } = await subscribedSocket(baseUrl, headers, channel);
  const live = `live before the end in ${channel}`;
  await post(live, channel);
  await stream.until((text) => text.includes(live), 3000);
  expect(await socket.next('push')).toMatchObject({ data: { text: live } });
  return { stream, socket, closed };
}

/**
 * Posts a message once the credential ended, then expects both to have ended (the stream
 * closed, the socket with 1008 and a reason matching `why`) without ever showing it.
 */
export async function expectLiveEnded(live: Live, channel: string, why: RegExp, post: Poster) {
  const after = `published after the end in ${channel}`;
  await post(after, channel);
  await within(live.stream.ended, 2000, 'the event stream ends');
  const { code, reason } = await within(live.closed, 2000, 'the WebSocket closes');
  expect(code).toBe(1008);
  expect(reason).toMatch(why);
  expect(live.stream.text()).not.toContain(after);
  expect(JSON.stringify(live.socket.received)).not.toContain(after);
}

/** Starts a device authorization of demo-device on `base`: its device and user codes. */
export async function startDevice(base: string) {
  const started = await fetch(`${base}/device`, {
    method: 'POST',
    headers: FORM_TYPE,
    body: 'client_id=demo-device&scope=openid',
  });
  expect(started.status).toBe(200);
  return (await started.json()) as { device_code: string; user_code: string };
}

/** Polls the token endpoint of `base` once for `deviceCode`: the answer's status and body. */
export async function pollDevice(base: string, deviceCode: string) {
  const res = await fetch(`${base}/token`, {
    method: 'POST',
    headers: FORM_TYPE,
    body: new URLSearchParams({
      grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
      device_code: deviceCode,
      client_id: 'demo-device',
    }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/**
 * alice signs in on `/device/verify` of `bases[0]` and sends 30 approvals as a
 * {@link releasedBurst}, the right code written last: every wrong code is counted before its
 * lookup (the right one comes after 29 of them were counted), so at most 5 are looked up
 * (answered 400, the others 429) and the right one is not approved. Code that counted a wrong
 * code only after its lookup lets the right one through while the counts are still on their
 * way (with Redis, where each step is a round trip).
 */
export async function expectReleasedBurstHeld(bases: string[], ip: string, origin = bases[0]!) {
  const { device_code, user_code } = await startDevice(bases[0]!);
  const { browser, hidden } = await deviceCodeForm(bases[0]!, ip, origin, 'alice');
  const cookie = [...browser.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
  const last = 29;
  const statuses = await releasedBurst(
    bases,
    '/device/verify',
    { Cookie: cookie, Origin: origin, ...from(ip) },
    codeAttempts(hidden, user_code, last),
  );
  const wrong = statuses.slice(0, last);
  expect(new Set(wrong), String(statuses)).toEqual(new Set([400, 429]));
  expect(wrong.filter((s) => s === 400).length, String(statuses)).toBeLessThanOrEqual(5);
  const poll = await pollDevice(bases.at(-1)!, device_code);
  expect(poll.body, String(statuses)).toMatchObject({ error: 'authorization_pending' });
}
