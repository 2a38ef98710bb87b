// openid-client, an optional peer dependency: loaded on first use, with a message that says
// what to install when it is missing.
import { PorticoError } from '../core/errors/http-error.js';

type OpenidClient = typeof import('openid-client');

let loading: Promise<OpenidClient> | undefined;

/** `openid-client` (v6), loaded once. */
export function loadOpenidClient(): Promise<OpenidClient> {
  loading ??= import('openid-client').catch((error: unknown) => {
    loading = undefined;
    throw new PorticoError(
      'portico/client needs openid-client: npm install openid-client@6',
      'ERR_MISSING_PEER',
      { cause: error },
    );
  });
  return loading;
}
