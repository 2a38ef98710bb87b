import type { IncomingMessage } from 'node:http';
import {
  badRequest,
  type CredentialGuard,
  type MethodTable,
  type Middleware,
  readForm,
  readJson,
  requirePrincipal,
  sendJson,
  sendNoContent,
  unprocessable,
} from 'portico';
import { challenge, invalidCredentials } from 'portico/auth';
import { unsupportedMediaType } from 'portico/core';
import type { AuthSetup } from './auth.js';
import type { Upstream } from './upstream.js';
import { USER_SCOPES, type Users } from './users.js';

/** Non-prompting challenge for the sign-in form: browsers must not pop up a Basic dialog. */
const LOGIN_CHALLENGE = challenge('Cookie', {
  realm: 'api',
  'form-action': '/login',
  'cookie-name': 'session',
});

async function readCredentials(
  req: IncomingMessage,
): Promise<{ username: string; password: string }> {
  const type = req.headers['content-type'] ?? '';
  let username: unknown;
  let password: unknown;
  if (/^application\/x-www-form-urlencoded/i.test(type)) {
    const form = await readForm(req);
    for (const name of ['username', 'password']) {
      // one value each: a proxy reading the last of two would see other credentials
      if (form.getAll(name).length > 1) throw badRequest(`The field ${name} is repeated.`);
    }
    username = form.get('username');
    password = form.get('password');
  } else if (/^application\/(?:[\w.+-]+\+)?json/i.test(type)) {
    const body = await readJson<Record<string, unknown> | null>(req);
    username = body?.username;
    password = body?.password;
  } else {
    throw unsupportedMediaType('Send the credentials as a form or as JSON.');
  }
  const errors = [];
  for (const [field, value] of [
    ['username', username],
    ['password', password],
  ] as const) {
    if (value === undefined || value === null || value === '') {
      errors.push({ field, message: 'is required' });
    } else if (typeof value !== 'string') {
      errors.push({ field, message: 'must be a string' });
    }
  }
  if (errors.length > 0) throw unprocessable(errors);
  return { username: username as string, password: password as string };
}

/** `/api/me` and `/login`. */
export function accountRoutes(
  users: Users,
  auth: AuthSetup,
  guard: CredentialGuard,
): Record<string, MethodTable> {
  return {
    '/api/me': {
      GET(req, res) {
        const { sub, name, role, scopes, method } = requirePrincipal(req);
        // a client acting for itself (client credentials) has no user's name or role: it is
        // named by its id, and its role is `service`, never null
        sendJson(res, 200, { sub, name: name ?? sub, role: role ?? 'service', scopes, method });
      },
    },
    '/login': {
      async POST(req, res) {
        const { username, password } = await readCredentials(req);
        // counted with every other refused credential of this client: once spent, 429
        // without computing the password's hash, a right password included
        const user = await guard.attempt(req, () => users.verify(username, password));
        if (user === undefined) {
          throw invalidCredentials(LOGIN_CHALLENGE, 'The user name or password is not right.');
        }
        await auth.sessions.signIn(req, res, {
          sub: user.sub,
          name: user.name,
          role: user.role,
          scopes: USER_SCOPES,
        });
        sendNoContent(res);
      },
    },
  };
}

/** The relation of the `Link` to the upstream provider's end-session URL. */
export const END_SESSION_REL = 'urn:portico:rel:end-session';

/**
 * The API's sign-out: `POST /logout` without RP-Initiated Logout parameters ends the session
 * (an `Origin` of this service only) and answers 204. A session signed in at the upstream
 * provider also gets a `Link` to that provider's end-session URL (`id_token_hint`, back to
 * `{BASE_URL}/`), which the console follows. The rest of `/logout` is the OpenID Provider's
 * end-session endpoint (oauth.ts).
 */
export function apiSignOut(auth: AuthSetup, upstream?: Upstream): Middleware {
  return async (req, res) => {
    if (upstream === undefined) {
      await auth.sessions.signOut(req, res);
      return sendNoContent(res);
    }
    const back = new URL('/', upstream.baseUrl).href;
    const endSession = await upstream.signIn.signOut(req, res, { postLogoutRedirectUri: back });
    sendNoContent(
      res,
      endSession === undefined ? undefined : { Link: `<${endSession}>; rel="${END_SESSION_REL}"` },
    );
  };
}
