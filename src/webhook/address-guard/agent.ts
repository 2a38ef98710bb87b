import * as undici from 'undici';
import { type GuardedAgentOptions, guardedAgentWith } from './guard.js';

/**
 * An undici `Agent` that delivers webhooks only where the guard allows, checking at connect
 * time, on every new connection: the scheme must be `https:` (or `http:` with `allowHttp`);
 * an IP-literal host must be public; a host name is resolved with `lookup`, refused if ANY
 * answer is not public, and the socket connects to the checked addresses themselves, so a
 * second, different DNS answer (DNS rebinding) never gets a connection. TLS keeps the host
 * name for SNI and for the certificate check. A refusal fails the request with the
 * {@link WebhookAddressError} itself; nothing is sent.
 *
 * The agent follows no redirects (undici's `request` does not unless a redirect interceptor
 * is composed in); do not add one: a `3xx` to a private address is a response, not a hop.
 *
 * @example
 * ```ts
 * import { request } from 'undici';
 *
 * const agent = createGuardedAgent({ connectTimeout: 5_000 });
 * const res = await request(subscription.url, { method: 'POST', body, headers, dispatcher: agent });
 * await res.body.dump();
 * ```
 */ export function createGuardedAgent(options: GuardedAgentOptions = {}): undici.Agent {
  return guardedAgentWith(undici, options);
}
