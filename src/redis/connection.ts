// What portico's Redis stores need of a client, whichever library and topology: one command
// or a few on one connection (routed by a key to its slot's primary on a cluster), whether
// the client is between reconnections, and a subscriber for pub/sub (sharded on a cluster).

/** Arguments of one Redis command, its name first. */
export type RedisCommand = readonly (string | number)[];

/** A connection in subscriber mode, made from the client the user passed. @internal */
export interface RedisSubscriber {
  subscribe(channel: string): Promise<void>;
  unsubscribe(channel: string): Promise<void>;
  close(): Promise<void>;
}

/** One client seen through what the stores use. @internal */
export interface RedisConnection {
  /** A Redis Cluster: publish with `SPUBLISH`, subscribe with `SSUBSCRIBE`. */
  readonly cluster: boolean;
  /** Why commands cannot be sent now (between reconnections, closed), or `undefined`. */
  down(): string | undefined;
  /** One command; `key` routes it (the slot of a key it names). */
  send(key: string, command: RedisCommand): Promise<unknown>;
  /**
   * Commands sent together on the connection of `key`'s node, in order (a keyless `WAIT`
   * after a write is answered by the node that took the write). Each reply, or its error.
   */
  pipeline(key: string, commands: readonly RedisCommand[]): Promise<unknown[]>;
  /**
   * Told that a command got no answer in time: a client that does not notice a dead primary
   * on its own looks for the cluster's new topology.
   */
  unanswered?(): void;
  /** A new connection in subscriber mode, handing every message to `deliver`. */
  subscriber(deliver: (channel: string, text: string) => void): RedisSubscriber;
}
