// The one-time JWT ids of one token request (its client assertion's `jti`, its DPoP proof's),
// checked first and recorded last: a request refused for its grant, its client or its proof
// writes nothing to a replay store, so a stranger's refused requests cannot fill one.

/**
 * The ids a request will record once it is known good: each step records one id atomically
 * (set-if-absent) and throws when it was recorded already, so that of two requests racing
 * with one proof or assertion, one wins. `commit` runs them once, in order; a later call
 * returns the first one's outcome.
 *
 * @example
 * ```ts
 * const pending = new PendingIds();
 * const client = await ctx.authenticateClient(req, params, pending);
 * // … every check of the grant …
 * await pending.commit(); // before the code or refresh token is spent
 * ```
 */
export class PendingIds {
  readonly #steps: (() => Promise<void>)[] = [];
  #committed: Promise<void> | undefined;

  /** Adds the recording of one id; refused once `commit` has run. */
  add(step: () => Promise<void>): void {
    if (this.#committed !== undefined) throw new Error('PendingIds: add() after commit()');
    this.#steps.push(step);
  }

  /** Records every id, in the order added; rejects with the first refusal. */
  commit(): Promise<void> {
    this.#committed ??= this.#run();
    return this.#committed;
  }

  async #run(): Promise<void> {
    for (const step of this.#steps) await step();
  }
}
