import type { Unsubscribe } from '../../realtime/broker.js';

/**
 * A connection's subscribed channels, each with its unsubscribe (`undefined` without a hub).
 * Most connections follow one channel: it is kept in two fields, and a `Map` (about 250 bytes
 * with its table) is made only for a second one. With 10,000 connections that is the
 * difference between a protocol that costs about as much memory as a bare `ws` loop and one
 * that does not.
 */
export class ChannelSet {
  #first: string | undefined;
  #firstOff: Unsubscribe | undefined;
  #more: Map<string, Unsubscribe | undefined> | undefined;

  has(channel: string): boolean {
    return this.#first === channel || (this.#more?.has(channel) ?? false);
  }

  /** Adds `channel` (not already in the set). */
  add(channel: string, off: Unsubscribe | undefined): void {
    if (this.#first === undefined) {
      this.#first = channel;
      this.#firstOff = off;
    } else {
      this.#more ??= new Map();
      this.#more.set(channel, off);
    }
  }

  /** The unsubscribe of `channel` (`undefined` when absent or without a hub). */
  get(channel: string): Unsubscribe | undefined {
    return this.#first === channel ? this.#firstOff : this.#more?.get(channel);
  }

  /** Removes `channel`; its unsubscribe, if any. */
  take(channel: string): Unsubscribe | undefined {
    if (this.#first === channel) {
      const off = this.#firstOff;
      this.#first = undefined;
      this.#firstOff = undefined;
      return off;
    }
    const off = this.#more?.get(channel);
    this.#more?.delete(channel);
    return off;
  }

  /** The channels, in no particular order. */
  names(): string[] {
    const names = this.#more === undefined ? [] : [...this.#more.keys()];
    if (this.#first !== undefined) names.unshift(this.#first);
    return names;
  }
}
