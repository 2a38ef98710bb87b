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

/** The tokens of openid-client's answer to a token request. */
export function tokensOf(response: {
  access_token: string;
  token_type: string;
  refresh_token?: string;
  id_token?: string;
  scope?: string;
  expiresIn(): number | undefined;
}): UpstreamTokens {
  const expiresIn = response.expiresIn();
  return Object.freeze({
    accessToken: response.access_token,
    tokenType: response.token_type,
    ...(response.refresh_token !== undefined && { refreshToken: response.refresh_token }),
    ...(response.id_token !== undefined && { idToken: response.id_token }),
    ...(expiresIn !== undefined && { expiresAt: Date.now() + expiresIn * 1000 }),
    ...(response.scope !== undefined && { scope: response.scope }),
  });
}
