// Who may use which channel of the channel protocol.

import { type Connection, type ConnectionOutput, connectionId } from './connection.js';
import type { ChannelAuthorizer } from './options.js';

/**
 * Asks `authorize` whether a connection may subscribe to, or publish on, a channel; answers
 * a refusal with a `forbidden` error. The `reserved` channel (where relays cross processes)
 * is refused to every client.
 */
export class ChannelGate {
  readonly #authorize: ChannelAuthorizer | undefined;
  readonly #reserved: string | undefined;
  readonly #output: ConnectionOutput;

  constructor(
    authorize: ChannelAuthorizer | undefined,
    reserved: string | undefined,
    output: ConnectionOutput,
  ) {
    this.#authorize = authorize;
    this.#reserved = reserved;
    this.#output = output;
  }

  /** Whether `conn` may take `action` on `channel`; a refusal is answered. */
  allows(conn: Connection, action: 'subscribe' | 'publish', channel: string): boolean {
    if (channel !== this.#reserved) {
      const authorize = this.#authorize;
      if (authorize === undefined) return true;
      const access = { action, channel, principal: conn.principal, id: connectionId(conn) };
      if (authorize(access) === true) return true;
    }
    this.#output.sendJson(conn, { type: 'error', code: 'forbidden', action, channel });
    return false;
  }
}
