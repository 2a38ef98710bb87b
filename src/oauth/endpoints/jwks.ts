import type { Middleware } from '../../core/compose.js';
import type { Duration } from '../../core/duration.js';
import { JSON_TYPE, send } from '../../core/send.js';
import { methods } from '../../http/routing/router.js';
import { assertKnownOptions, durationOption } from '../../internal/options.js';
import type { OAuthContext } from '../context.js';

/** Options of {@link createJwksEndpoint}. */
export interface JwksEndpointOptions {
  /**
   * How long verifiers may keep the key set (`Cache-Control: max-age`, written in whole
   * seconds), in milliseconds. Keep it at most the key set's `publishAheadMs`, so that every
   * verifier has fetched a new key before it starts signing.
   * @defaultValue `300_000` (5 minutes, the default `publishAheadMs`)
   */
  maxAge?: Duration;
}

const KNOWN = ['maxAge'] as const satisfies readonly (keyof JwksEndpointOptions)[];

/**
 * Serves the public signing keys, `ctx.keys.jwks()`, on `GET` (and `HEAD`): every key that
 * signs now, that will sign soon, or whose tokens may still be alive, each with `kid`,
 * `use: "sig"` and `alg`, read at each request so that a rotation shows at once. The answer
 * is `application/json` with `Cache-Control: public, max-age=300`.
 *
 * Caching is safe because of how the key set rotates: a new key is published
 * `publishAheadMs` (5 minutes by default) before it signs, and a verifier that cached this
 * document for at most `maxAge` has fetched it again by then. Keep `maxAge` ≤
 * `publishAheadMs` (both in milliseconds). A verifier that meets an unknown `kid` refetches anyway (as
 * portico's own `jwksUrl` does).
 *
 * @example
 * ```ts
 * createRouter({ '/.well-known/jwks.json': createJwksEndpoint(ctx) });
 * ```
 * @see {@link https://www.rfc-editor.org/rfc/rfc7517#section-5 | RFC 7517 §5}
 */
export function createJwksEndpoint(
  ctx: OAuthContext,
  options: JwksEndpointOptions = {},
): Middleware {
  const owner = 'createJwksEndpoint()';
  assertKnownOptions(owner, options, KNOWN);
  const maxAge = durationOption(owner, 'maxAge', options.maxAge, 300_000);
  const cacheControl = `public, max-age=${Math.floor(maxAge / 1000)}`;
  return methods({
    GET(_req, res) {
      send(res, 200, JSON.stringify(ctx.keys.jwks()), {
        'Content-Type': JSON_TYPE,
        'Cache-Control': cacheControl,
      });
    },
  });
}
