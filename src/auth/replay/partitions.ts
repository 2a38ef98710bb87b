// Not exported: the per-partition share of a MemoryReplayStore. Each partition (a DPoP key's
// thumbprint, a client id) keeps the deadlines of its live ids, so that one caller holding
// many ids is refused while the others keep their room.
import { tooManyRequests } from '../../core/errors/errors.js';
import { Fifo } from '../../internal/fifo.js';

/** The longest `Retry-After` a spent partition suggests, seconds. */
const MAX_RETRY_AFTER_SECONDS = 600;

interface Partition {
  /** Deadlines of its ids, epoch ms, in write order (nearly ascending). */
  readonly deadlines: Fifo<number>;
  /** Until when an exact recount cannot free anything (the earliest deadline of the last one). */
  fullUntil: number;
}

/** The earliest of `deadlines`. */
function earliest(deadlines: Iterable<number>): number {
  let min = Number.POSITIVE_INFINITY;
  for (const until of deadlines) if (until < min) min = until;
  return min;
}

/** The live ids of each partition, counted against one share. */
export class ReplayPartitions {
  readonly #share: number;
  readonly #sweepIntervalMs: number;
  readonly #partitions = new Map<string, Partition>();
  #nextSweep = Number.NEGATIVE_INFINITY;

  constructor(share: number, sweepIntervalMs: number) {
    this.#share = share;
    this.#sweepIntervalMs = sweepIntervalMs;
  }

  /** Throws a 429 (`ERR_REPLAY_SHARE_SPENT`, with `Retry-After`) when `name` holds its share. */
  assertRoom(name: string, now: number): void {
    this.#sweep(now);
    const partition = this.#partitions.get(name);
    if (partition === undefined) return;
    const { deadlines } = partition;
    deadlines.dropWhile((until) => until <= now);
    if (deadlines.length < this.#share) return;
    // ids of varied lifetimes: one written early may outlive those after it, so recount
    if (now >= partition.fullUntil) {
      deadlines.retain((until) => until > now);
      if (deadlines.length < this.#share) return;
      partition.fullUntil = earliest(deadlines);
    }
    const wait = Math.ceil((partition.fullUntil - now) / 1000);
    throw tooManyRequests(
      Math.min(Math.max(wait, 1), MAX_RETRY_AFTER_SECONDS),
      'Too many one-time tokens of this caller are pending; try again later.',
      { code: 'ERR_REPLAY_SHARE_SPENT' },
    );
  }

  /** Counts an id of `name`, live until `until` (epoch ms). */
  charge(name: string, until: number): void {
    let partition = this.#partitions.get(name);
    if (partition === undefined) {
      partition = { deadlines: new Fifo(), fullUntil: Number.NEGATIVE_INFINITY };
      this.#partitions.set(name, partition);
    }
    partition.deadlines.push(until);
  }

  /** Every interval: drops the expired deadlines, and the partitions left empty. */
  #sweep(now: number): void {
    if (now < this.#nextSweep) return;
    this.#nextSweep = now + this.#sweepIntervalMs;
    for (const [name, { deadlines }] of this.#partitions) {
      deadlines.dropWhile((until) => until <= now);
      if (deadlines.length === 0) this.#partitions.delete(name);
    }
  }
}
