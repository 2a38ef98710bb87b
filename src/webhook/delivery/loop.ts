import { type Logger, log } from '../../core/logger.js';
import type { WebhookDelivery, WebhookStore } from '../store.js';

/**
 * How long past an attempt's timeout a claimed delivery stays leased: time to record the
 * outcome. A sender that died lets its deliveries go after `timeout` + this.
 */
const LEASE_MARGIN_MS = 5000;

/** What a {@link DeliveryLoop} is given. */
export interface DeliveryLoopOptions {
  store: WebhookStore;
  logger: Logger;
  now: () => number;
  /** Milliseconds an attempt may take: a claimed delivery is leased for this and a margin. */
  timeout: number;
  /** Attempts in flight at once, over every endpoint. */
  concurrency: number;
  /** Attempts in flight at once per endpoint. */
  perEndpoint: number;
  /** Whether each endpoint's deliveries are taken in the order they were sent. */
  ordered: boolean;
  /** The longest wait, in milliseconds, between two looks at the store. */
  pollInterval: number;
  /** Makes one attempt of a claimed delivery and records it; never rejects. */
  deliver(delivery: WebhookDelivery): Promise<void>;
}

/**
 * The sender's delivery loop: claims due deliveries from the store while a slot is free,
 * runs each through `deliver`, and sleeps until the next one falls due (or the next look at
 * the store). The end of an attempt wakes it, so with every slot taken there is no timer.
 * @internal
 */
export class DeliveryLoop {
  readonly #options: DeliveryLoopOptions;
  readonly #inFlight = new Set<Promise<void>>();
  #timer: NodeJS.Timeout | undefined;
  /** When `#timer` fires (epoch ms). */
  #timerAt = 0;
  #ticking = false;
  /** The tick under way: `close()` waits for it, so a batch claimed just then is not lost. */
  #currentTick: Promise<void> | undefined;
  #again = false;
  /** Whether the last look at the store found nothing it could take (all due ones held back). */
  #idle = false;
  /** The `now` of that look (epoch ms): what fell due after it was not held back, only late. */
  #claimedAt = 0;
  #closed = false;

  constructor(options: DeliveryLoopOptions) {
    this.#options = options;
  }

  /** Whether {@link close} was called. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Whether an attempt could start now (a slot is free). */
  get hasRoom(): boolean {
    return this.#inFlight.size < this.#options.concurrency;
  }

  /** Looks at the store now (or once more after the look under way). */
  wake(): void {
    if (this.#closed) return;
    const starting = !this.#ticking; // else the tick under way runs once more
    const running = this.#tick().catch(() => {});
    if (starting) this.#currentTick = running;
  }

  /**
   * Stops taking deliveries and waits for those in flight. A claim answered after this point
   * still starts its batch: it waits for that, then for every attempt, so each is recorded.
   */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    await this.#currentTick;
    await Promise.allSettled([...this.#inFlight]);
  }

  #start(delivery: WebhookDelivery): void {
    const task = this.#options.deliver(delivery).then(() => {
      this.#inFlight.delete(task);
      this.wake();
    });
    this.#inFlight.add(task);
  }

  async #tick(): Promise<void> {
    if (this.#ticking) {
      this.#again = true;
      return;
    }
    this.#ticking = true;
    const { store, now, concurrency, timeout, perEndpoint, ordered, pollInterval } = this.#options;
    try {
      do {
        this.#again = false;
        while (!this.#closed && this.#inFlight.size < concurrency) {
          this.#claimedAt = now();
          const batch = await store.claim({
            now: this.#claimedAt,
            limit: concurrency - this.#inFlight.size,
            leaseMs: timeout + LEASE_MARGIN_MS,
            perEndpoint,
            ordered,
          });
          this.#idle = batch.length === 0;
          if (this.#idle) break;
          for (const delivery of batch) this.#start(delivery);
        }
        // With every slot taken, the end of an attempt wakes the sender: no timer to set. A
        // wake while the store is asked when the next delivery falls due (an attempt ended
        // and filed its retry meanwhile) makes the answer stale: look again.
        if (!this.#again && this.#inFlight.size < concurrency) await this.#arm();
      } while (this.#again && !this.#closed);
    } catch (error) {
      log(
        this.#options.logger,
        'error',
        { component: 'webhook', event: 'store.failed', err: error },
        'reading the webhook delivery store failed',
      );
      if (!this.#closed) this.#arm(pollInterval);
    } finally {
      this.#ticking = false;
    }
  }

  /** Sets the timer for the next due delivery (or the next look at the store). */
  async #arm(wait?: number): Promise<void> {
    if (this.#closed) return;
    const { store, now, pollInterval } = this.#options;
    if (wait === undefined) {
      const due = await store.nextDue?.();
      // Due deliveries held back by a concurrency bound (due when the store was last asked,
      // yet not taken) wait for an attempt to end (which wakes the sender), not for a spin on
      // the store; one that fell due since is looked for at once.
      const until = due === undefined ? pollInterval : due - now();
      const heldBack = this.#idle && due !== undefined && due <= this.#claimedAt;
      wait = heldBack ? pollInterval : Math.min(Math.max(until, 0), pollInterval);
    }
    // keep a timer that already fires as soon (no timer churn per attempt)
    const at = Date.now() + wait;
    if (this.#timer !== undefined && this.#timerAt <= at) return;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timerAt = at;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.wake();
    }, wait);
    this.#timer.unref();
  }
}
