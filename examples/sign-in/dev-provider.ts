// A development OpenID Provider on 127.0.0.1 (panva's oidc-provider, any username signs in),
// for running the sign-in examples without an account anywhere. Never in production.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';

export async function startDevProvider(
  redirectUri: string,
  postLogoutRedirectUri: string,
): Promise<{ issuer: string; clientId: string; clientSecret: string; server: Server }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const clientSecret = 'dev-client-secret';
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: 'sign-in-example',
        client_secret: clientSecret,
        redirect_uris: [redirectUri],
        post_logout_redirect_uris: [postLogoutRedirectUri],
        grant_types: ['authorization_code', 'refresh_token'],
      },
    ],
    findAccount: (_ctx, sub) => ({
      accountId: sub,
      claims: () => ({ sub, name: sub, email: `${sub}@example.test`, email_verified: true }),
    }),
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    cookies: { keys: ['dev-provider-cookie-key-not-for-production'] },
    features: { devInteractions: { enabled: true }, rpInitiatedLogout: { enabled: true } },
    pkce: { required: () => true },
  });
  server.on('request', provider.callback());
  return { issuer, clientId: 'sign-in-example', clientSecret, server };
}
