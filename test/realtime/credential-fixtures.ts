// Real credentials whose end a real-time delivery must honour, for the SSE and WebSocket
// suites: an API key (its store announces deletions), a session (signed out over HTTP), a
// bearer token of an OAuth grant, and a principal whose credential expires in a few hundred ms.
import { parseSetCookie } from 'cookie';
import { apiKeyAuth } from '../../src/auth/api-key/authenticator.js';
import { createApiKey, MemoryApiKeyStore } from '../../src/auth/api-key/store.js';
import type { Authenticator } from '../../src/auth/authenticator.js';
import { jwtBearer } from '../../src/auth/jwt/bearer.js';
import type { Revocations } from '../../src/auth/revocations.js';
import { createSessions } from '../../src/auth/session/session.js';
import type { Middleware } from '../../src/core/compose.js';
import { sendNoContent } from '../../src/core/send.js';
import { AUDIENCE, ISSUER, makeKey, mint } from '../auth/jwt/jwt-fixtures.js';
import { type Listening, request } from '../helpers/http.js';

/** The credentials of one suite, all announcing on `revocations`. */
export interface Credentials {
  /** Tried in order by `authenticate()` or the upgrade handler. */
  authenticators: Authenticator[];
  /** `POST /login` (a session for `carol`) and `POST /logout`; anything else goes on. */
  accountRoutes: Middleware;
  keys: MemoryApiKeyStore;
  /** A new API key of `owner`: its headers and its record id. */
  apiKey(owner: string): Promise<{ headers: Record<string, string>; id: string }>;
  /** Signs in at `server`: the headers that carry the session. */
  signIn(server: Listening): Promise<Record<string, string>>;
  /** Signs the session of `headers` out at `server`. */
  signOut(server: Listening, headers: Record<string, string>): Promise<void>;
  /** The headers of a bearer token of grant `grantId`. */
  bearer(grantId: string, sub?: string): Promise<Record<string, string>>;
  /** The headers of a principal `sub` whose credential expires `ms` from now. */
  expiring(sub: string, ms: number): Record<string, string>;
}

/** An authenticator whose principals expire when `X-Expires-In` (ms) says. */
const expiringAuth: Authenticator = {
  scheme: 'Expiring',
  authenticate(req) {
    const sub = req.headers['x-expiring-user'];
    const ms = Number(req.headers['x-expires-in']);
    if (typeof sub !== 'string' || !Number.isFinite(ms)) return undefined;
    return { sub, scopes: [], method: 'test', expiresAt: Date.now() + ms };
  },
};

/** One signing key for every suite of the process (an RSA key takes a while to make). */
let signingKey: ReturnType<typeof makeKey> | undefined;

export async function credentials(revocations: Revocations): Promise<Credentials> {
  const keys = new MemoryApiKeyStore({ revocations });
  const sessions = createSessions({ allowedOrigins: ['https://app.example.com'], revocations });
  signingKey ??= makeKey('rt-1');
  const signing = await signingKey;
  const bearer = jwtBearer({ publicKey: signing.pem, issuer: ISSUER, audience: AUDIENCE });
  const accountRoutes: Middleware = async (req, res, next) => {
    if (req.method === 'POST' && req.url === '/login') {
      await sessions.signIn(req, res, { sub: 'carol', scopes: [] });
      return sendNoContent(res);
    }
    if (req.method === 'POST' && req.url === '/logout') {
      await sessions.signOut(req, res);
      return sendNoContent(res);
    }
    return next();
  };
  return {
    authenticators: [apiKeyAuth({ store: keys }), sessions.authenticator, bearer, expiringAuth],
    accountRoutes,
    keys,
    async apiKey(owner) {
      const { key, record } = await createApiKey(keys, { owner });
      return { headers: { 'x-api-key': key }, id: record.id };
    },
    async signIn(server) {
      const reply = await request(server, '/login', { method: 'POST' });
      const line = (reply.headers['set-cookie'] ?? []).find((l) => l.startsWith('session='));
      if (reply.status !== 204 || line === undefined) throw new Error('sign-in failed');
      const { name, value } = parseSetCookie(line);
      return { cookie: `${name}=${value}` };
    },
    async signOut(server, headers) {
      const reply = await request(server, '/logout', { method: 'POST', headers });
      if (reply.status !== 204) throw new Error(`sign-out failed: ${reply.status}`);
    },
    async bearer(grantId, sub = 'bob') {
      const token = await mint(signing, { sub, grant_id: grantId, jti: `jti-${grantId}` });
      return { authorization: `Bearer ${token}` };
    },
    expiring: (sub, ms) => ({ 'x-expiring-user': sub, 'x-expires-in': String(ms) }),
  };
}
