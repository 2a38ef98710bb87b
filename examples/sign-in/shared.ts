// The part both sign-in examples share: portico's sessions, one upstream OpenID Provider, the
// sign-in routes (`/login/oidc`, its callback) and a page that shows who is signed in.
import {
  authenticate,
  compose,
  createSessions,
  type Middleware,
  requirePrincipal,
  sendJson,
} from 'portico';
import { createSignIn, upstreamProvider } from 'portico/client';

/** Where the provider is, and who this application is there. */
export interface SignInSettings {
  /** This application's public origin: the redirect URI is `{baseUrl}/login/oidc/callback`. */
  baseUrl: string;
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Seals the sign-in cookie and the tokens kept with the session (32 bytes or more). */
  secret: string;
}

export function createSignInDoor(settings: SignInSettings) {
  const secure = settings.baseUrl.startsWith('https:');
  const sessions = createSessions({
    allowedOrigins: [new URL(settings.baseUrl).origin],
    cookie: { secure },
    cookieName: 'session',
  });
  const signIn = createSignIn({
    baseUrl: settings.baseUrl,
    secret: settings.secret,
    sessions,
    cookie: { secure },
    // the provider's tokens stay here, sealed, for calls on the user's behalf
    tokens: {},
    providers: [
      upstreamProvider({
        name: 'oidc',
        label: 'the example provider',
        issuer: settings.issuer,
        clientId: settings.clientId,
        clientSecret: settings.clientSecret,
        scope: 'openid email profile offline_access',
      }),
    ],
    // account linking: one local subject per provider account; refuse unverified emails
    toUser: ({ provider, claims }) =>
      claims.email_verified === false
        ? undefined
        : {
            sub: `${provider.name}:${claims.sub}`,
            name: typeof claims.name === 'string' ? claims.name : claims.sub,
            scopes: ['read:profile'],
          },
  });
  /** `GET /me`: who is signed in (401 otherwise). */
  const me: Middleware = compose([
    authenticate([sessions.authenticator]),
    (req, res) => {
      const { sub, name } = requirePrincipal(req);
      sendJson(res, 200, { sub, name });
    },
  ]);
  /** `POST /logout`: the session ends here, then at the provider (RP-Initiated Logout). */
  const logout: Middleware = async (req, res) => {
    const next = await signIn.signOut(req, res, { postLogoutRedirectUri: `${settings.baseUrl}/` });
    sendJson(res, 200, { signedOut: true, ...(next !== undefined && { continueAt: next }) });
  };
  return { sessions, signIn, me, logout };
}

/** The home page: a sign-in link, or who is signed in. */
export const HOME = `<!doctype html><meta charset="utf-8"><title>Sign-in example</title>
<p><a href="/login/oidc?returnTo=%2Fme">Sign in</a></p>`;
