// The tokens of a token endpoint answer, as portico/client hands them to the application
// (the sign-in callback, the device flow): camel-cased, the expiry as an epoch time, frozen.

/** A provider's tokens, as a token endpoint answered them. */
export interface UpstreamTokens {
  readonly accessToken: string;
  readonly tokenType: string;
  readonly refreshToken?: string;
  readonly idToken?: string;
  /** Epoch milliseconds, when the provider said. */
  readonly expiresAt?: number;
  readonly scope?: string;
}

/**
 * When answered tokens expire, as epoch milliseconds: the `expires_in` the provider answered,
 * counted from `now`; `undefined` when it said none. (openid-client's `expiresIn()` counts down
 * on its own clock and floors to the second: an answer read 1 ms late loses a whole second.)
 */
export function expiryOf(response: { expires_in?: number }, now = Date.now()): number | undefined {
  const seconds = response.expires_in;
  return typeof seconds === 'number' && Number.isFinite(seconds) ? now + seconds * 1000 : undefined;
}

/** The tokens of openid-client's answer to a token request. */
export function tokensOf(response: {
  access_token: string;
  token_type: string;
  refresh_token?: string;
  id_token?: string;
  scope?: string;
  expires_in?: number;
}): UpstreamTokens {
  const expiresAt = expiryOf(response);
  return Object.freeze({
    accessToken: response.access_token,
    tokenType: response.token_type,
    ...(response.refresh_token !== undefined && { refreshToken: response.refresh_token }),
    ...(response.id_token !== undefined && { idToken: response.id_token }),
    ...(expiresAt !== undefined && { expiresAt }),
    ...(response.scope !== undefined && { scope: response.scope }),
  });
}
