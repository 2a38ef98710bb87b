// The examples' settings from the environment; without OIDC_ISSUER, a development provider.
import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import type { SignInSettings } from './shared.js';

export async function settingsFromEnv(
  env: NodeJS.ProcessEnv = process.env,
): Promise<SignInSettings & { close(): Promise<void> }> {
  const baseUrl = `http://127.0.0.1:${Number(env.PORT || 3020)}`;
  const secret = env.SIGN_IN_SECRET || randomBytes(32).toString('base64url');
  if (env.OIDC_ISSUER) {
    return {
      baseUrl,
      secret,
      issuer: env.OIDC_ISSUER,
      clientId: env.OIDC_CLIENT_ID ?? '',
      clientSecret: env.OIDC_CLIENT_SECRET ?? '',
      close: async () => {},
    };
  }
  const { startDevProvider } = await import('./dev-provider.js');
  const dev = await startDevProvider(`${baseUrl}/login/oidc/callback`, `${baseUrl}/`);
  const { server, ...provider } = dev;
  const close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return { baseUrl, secret, ...provider, close };
}

/** Runs an example's server from the environment's settings, printing where to sign in. */
export async function runExample(createApp: (settings: SignInSettings) => Server): Promise<void> {
  const settings = await settingsFromEnv();
  const port = Number(new URL(settings.baseUrl).port);
  createApp(settings).listen(port, '127.0.0.1', () => {
    console.log(`sign in at ${settings.baseUrl}/ (provider: ${settings.issuer})`);
  });
}
