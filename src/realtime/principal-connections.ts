import { type HttpError, tooManyRequests } from '../core/errors/errors.js';

/** The `Retry-After` of a refused connection: a slot frees up when another one closes. */
const RETRY_AFTER_SECONDS = 5;

/** The 429 problem of a connection past its principal's cap. */
function tooManyConnections(): HttpError {
  return tooManyRequests(
    RETRY_AFTER_SECONDS,
    'Too many open connections for this principal: close one first.',
    { code: 'ERR_TOO_MANY_CONNECTIONS' },
  );
}

/**
 * Open long-lived connections (event streams, WebSockets) counted per principal `sub`, so
 * that one principal cannot hold the process's sockets and memory.
 * @internal
 */
export class PrincipalConnections {
  readonly #open = new Map<string, number>();

  /**
   * Takes a slot for `sub`, or throws the 429 problem when it already holds `max`. The
   * returned function gives the slot back (once, however often it is called).
   */
  claim(sub: string, max: number): () => void {
    const held = this.#open.get(sub) ?? 0;
    if (held >= max) throw tooManyConnections();
    this.#open.set(sub, held + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.#open.get(sub) ?? 1) - 1;
      if (left > 0) this.#open.set(sub, left);
      else this.#open.delete(sub);
    };
  }

  /** How many connections `sub` holds now. */
  count(sub: string): number {
    return this.#open.get(sub) ?? 0;
  }
}
