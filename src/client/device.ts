// Device sign-in for command-line tools (RFC 8628): start at the provider, show the user code
// and the URL, poll at the provider's `interval` (slower on `slow_down`), answer the tokens;
// cancellable with an AbortSignal.
import { PorticoError } from '../core/errors/http-error.js';
import { assertKnownOptions, functionOption, invalidOption } from '../internal/options.js';
import { loadOpenidClient } from './openid-client.js';
import { internalsOf, type UpstreamProvider } from './provider.js';
import { tokensOf, type UpstreamTokens } from './tokens.js';

/** What the user is shown: the code to type, and where. */
export interface DeviceCode {
  readonly userCode: string;
  readonly verificationUri: string;
  /** The URL with the code in it, when the provider gives one (for a QR code). */
  readonly verificationUriComplete?: string;
  /** Epoch milliseconds: the code is not accepted after. */
  readonly expiresAt: number;
}

/** The tokens a device sign-in ends with. */
export interface DeviceTokens extends UpstreamTokens {
  /** The ID token's claims, when there is one. */
  readonly claims?: Readonly<Record<string, unknown>>;
}

/** Options of {@link deviceSignIn}. */
export interface DeviceSignInOptions {
  /** The provider to sign in at (its device authorization endpoint, from discovery). */
  provider: UpstreamProvider;
  /** The scopes to ask for. @defaultValue the provider's `scope` */
  scope?: string;
  /** Shows the user where to go and what to type (print it, draw a QR code). */
  onCode(code: DeviceCode): void | Promise<void>;
  /**
   * Cancels the sign-in (Ctrl-C): the promise rejects with the signal's reason.
   * @defaultValue none: until the code expires
   */
  signal?: AbortSignal;
}

const OWNER = 'deviceSignIn()';

/** The refusals of RFC 8628 §3.5 that end a sign-in, as errors with a stable code. */
function ended(error: unknown, label: string): unknown {
  const code = (error as { error?: unknown })?.error;
  if (code === 'access_denied') {
    return new PorticoError(`The sign-in at ${label} was refused.`, 'ERR_SIGN_IN_REFUSED', {
      cause: error,
    });
  }
  if (code === 'expired_token') {
    return new PorticoError(
      `The code expired before the sign-in at ${label} was finished.`,
      'ERR_SIGN_IN_EXPIRED',
      { cause: error },
    );
  }
  return error;
}

/**
 * Signs a user in at `provider` with the device authorization grant (RFC 8628), for a CLI or
 * a device without a browser: `onCode` shows the code and the URL, then the provider is polled
 * at its `interval` (5 seconds more after each `slow_down`) until the user approves (the tokens),
 * refuses (`ERR_SIGN_IN_REFUSED`) or lets the code expire (`ERR_SIGN_IN_EXPIRED`).
 *
 * @example
 * ```ts
 * import { deviceSignIn, upstreamProvider } from 'portico/client';
 *
 * const tokens = await deviceSignIn({
 *   provider: upstreamProvider({
 *     name: 'auth',
 *     issuer: 'https://auth.example.com',
 *     clientId: 'cli',
 *     scope: 'openid offline_access',
 *   }),
 *   onCode: ({ userCode, verificationUri }) =>
 *     console.log(`Open ${verificationUri} and enter ${userCode}`),
 *   signal: AbortSignal.timeout(600_000),
 * });
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc8628 | RFC 8628}
 */
export async function deviceSignIn(options: DeviceSignInOptions): Promise<DeviceTokens> {
  assertKnownOptions(OWNER, options, ['provider', 'scope', 'onCode', 'signal']);
  const at = internalsOf(options.provider);
  if (at === undefined)
    throw invalidOption(`${OWNER}: \`provider\` must come from upstreamProvider()`);
  const onCode = functionOption(OWNER, 'onCode', options.onCode);
  if (onCode === undefined) throw invalidOption(`${OWNER}: \`onCode\` is required`);
  const scope = options.scope ?? options.provider.scope;
  const { signal } = options;
  signal?.throwIfAborted();
  const client = await loadOpenidClient();
  const config = await at.configuration();
  const started = await client.initiateDeviceAuthorization(config, { scope });
  await onCode(
    Object.freeze({
      userCode: started.user_code,
      verificationUri: started.verification_uri,
      ...(started.verification_uri_complete !== undefined && {
        verificationUriComplete: started.verification_uri_complete,
      }),
      expiresAt: Date.now() + started.expires_in * 1000,
    }),
  );
  const response = await client
    .pollDeviceAuthorizationGrant(
      config,
      started,
      undefined,
      signal === undefined ? {} : { signal },
    )
    .catch((error: unknown) => {
      // cancelled: the caller's own reason, not openid-client's wrapping of it
      if (signal?.aborted === true) throw signal.reason;
      throw ended(error, options.provider.label);
    });
  const claims = response.claims();
  return Object.freeze({
    ...tokensOf(response),
    ...(claims !== undefined && { claims: Object.freeze({ ...claims }) }),
  });
}
