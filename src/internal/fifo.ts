/**
 * A first-in, first-out queue over an array: `push` at the back, `shift` from the front, both
 * O(1) (`Array#shift` moves every element; a `Map` consumed from its front makes every new
 * iterator step over the deleted slots). The front is cut off once it holds half the array.
 */
export class Fifo<T> {
  #items: (T | undefined)[] = [];
  #head = 0;

  /** How many items are queued. */
  get length(): number {
    return this.#items.length - this.#head;
  }

  /** Queues `item` at the back. */
  push(item: T): void {
    this.#items.push(item);
  }

  /** The front item, left in place. */
  peek(): T | undefined {
    return this.#items[this.#head];
  }

  /** Takes the front item. */
  shift(): T | undefined {
    if (this.#head >= this.#items.length) return undefined;
    const item = this.#items[this.#head];
    this.#items[this.#head++] = undefined;
    if (this.#head === this.#items.length) {
      this.#items = [];
      this.#head = 0;
    } else if (this.#head >= 1024 && this.#head * 2 >= this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
    return item;
  }

  /** Drops front items while `stale` says so; the first item kept, if any. */
  dropWhile(stale: (item: T) => boolean): T | undefined {
    let item = this.peek();
    while (item !== undefined && stale(item)) {
      this.shift();
      item = this.peek();
    }
    return item;
  }

  /** Keeps only the items `keep` says so, in order. O(length): call it once garbage is a share of the queue. */
  retain(keep: (item: T) => boolean): void {
    const kept: T[] = [];
    for (let i = this.#head; i < this.#items.length; i++) {
      const item = this.#items[i] as T;
      if (keep(item)) kept.push(item);
    }
    this.#items = kept;
    this.#head = 0;
  }

  *[Symbol.iterator](): IterableIterator<T> {
    for (let i = this.#head; i < this.#items.length; i++) yield this.#items[i] as T;
  }
}
