// The sign-in form shared by the authorization endpoint and the device verification page.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { SessionRecord } from '../../auth/session/store.js';
import { HttpError } from '../../core/errors/errors.js';
import type { OAuthContext } from '../context.js';
import type { UserClaims } from '../tokens/issue.js';
import { bodyErrorHeaders, singleValue } from './form-token.js';
import { localizeMessage } from './messages.js';
import { type OAuthPages, sendPage } from './render.js';

/** The outcome of {@link signInFromForm}. */
export type SignInOutcome =
  | { ok: true; session: SessionRecord }
  | { ok: false; status: number; message: string; username?: string }
  /** The credential guard refused to check the password (429), or could not count (503). */
  | { ok: false; throttled: HttpError };

/**
 * Checks the `username` and `password` of a sign-in form post with the app's
 * `users.verify` and starts a session (a new id, with the session's own origin check). A
 * failure says what to show on the sign-in page again. With `ctx.guard`, a client that has
 * spent its refused credentials is throttled before `users.verify` runs (no password hash is
 * computed for it, a right password is refused too), and a wrong password is counted.
 */
export async function signInFromForm(
  ctx: OAuthContext,
  req: IncomingMessage,
  res: ServerResponse,
  form: URLSearchParams,
): Promise<SignInOutcome> {
  const username = singleValue(form, 'username');
  const password = singleValue(form, 'password');
  if (username === undefined || password === undefined) {
    return { ok: false, status: 401, message: 'Enter your username and password.', username };
  }
  const wrong = {
    ok: false,
    status: 401,
    message: 'The username or password is wrong.',
    username: username.length > 256 ? undefined : username,
  } as const;
  let user: Awaited<ReturnType<OAuthContext['users']['verify']>>;
  try {
    await ctx.guard?.check(req);
    user = await verifyUser(ctx, username, password);
    if (user === undefined) await ctx.guard?.refused(req);
  } catch (err) {
    if (err instanceof HttpError && (err.status === 429 || err.status === 503)) {
      return { ok: false, throttled: err };
    }
    throw err;
  }
  if (user === undefined) return wrong;
  return startSession(ctx, req, res, user);
}

/** The user a sign-in names, or `undefined` for wrong (or oversized) credentials. */
async function verifyUser(ctx: OAuthContext, username: string, password: string) {
  if (username.length > 256 || password.length > 1024) return undefined;
  const user = await ctx.users.verify(username, password);
  if (user === undefined || user === null || typeof user.sub !== 'string' || user.sub === '') {
    return undefined;
  }
  return user;
}

async function startSession(
  ctx: OAuthContext,
  req: IncomingMessage,
  res: ServerResponse,
  user: UserClaims,
): Promise<SignInOutcome> {
  try {
    await ctx.sessions.signIn(req, res, {
      sub: user.sub,
      name: user.name,
      role: user.role,
      scopes: [],
    });
  } catch (err) {
    if (err instanceof HttpError && err.status < 500) {
      return { ok: false, status: err.status, message: err.detail };
    }
    throw err;
  }
  const session = await ctx.sessions.read(req);
  if (session === undefined) throw new Error('signInFromForm(): the new session cannot be read');
  return { ok: true, session };
}

/**
 * Answers a sign-in the credential guard throttled as a page of `pages.error`: 429 with
 * `Retry-After` once the client has spent its refused credentials, 503 while the guard's store
 * cannot count (it fails closed); `no-store` like every page; in `language`.
 */
export function sendThrottledPage(
  res: ServerResponse,
  pages: OAuthPages,
  error: HttpError,
  language = 'en',
): void {
  const status = error.status;
  const headers = bodyErrorHeaders(error);
  const seconds = Number(headers['Retry-After'] ?? 60);
  const t = (sentence: string, values?: Record<string, string>) =>
    localizeMessage(language, sentence, values);
  const data =
    status === 429
      ? {
          status,
          title: t('Too many attempts'),
          message:
            seconds < 120
              ? t('Too many failed sign-ins from your network. Try again in a minute.')
              : t('Too many failed sign-ins from your network. Try again in {minutes} minutes.', {
                  minutes: String(Math.ceil(seconds / 60)),
                }),
          language,
        }
      : {
          status,
          title: t('Try again later'),
          message: t('Sign-in is unavailable for a moment.'),
          language,
        };
  sendPage(res, status, pages.error(data), { headers, language });
}

/** `WWW-Authenticate` for a 401 sign-in page: the session's cookie challenge. */
export function signInChallenge(ctx: OAuthContext): Record<string, string> {
  const challenge = ctx.sessions.authenticator.challenge;
  return challenge === undefined ? {} : { 'WWW-Authenticate': challenge };
}
