import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';

/** What {@link post} learns of an answer: its status, and its `Retry-After`, if any. */
export interface PostAnswer {
  status: number;
  retryAfter: string | undefined;
}

/** Where a POST goes, parsed once per URL. */
interface Target {
  origin: string;
  path: string;
}

/** A handle on a POST under way, to cut it short. */
export interface PostHandle {
  /** Ends the exchange now: an answer already started still counts, else it fails with `reason`. */
  cut(reason: Error): void;
}

/** What {@link post} needs beyond the request. */
export interface PostOptions {
  /** The dispatcher, or its promise while it is being made (the first delivery loads undici). */
  dispatcher: Dispatcher | Promise<Dispatcher>;
  /** Milliseconds for the answer's headers, and between two chunks of its body. */
  timeout: number;
  /** Body bytes read (and thrown away) before the connection is given up instead. */
  bodyLimit: number;
  /** Cuts the exchange if it is still under way at `deadline` (`performance.now()` time). */
  watch?: { deadlines: DeadlineWatch; deadline: number } | undefined;
}

const targets = new Map<string, Target>();

function targetOf(url: string): Target {
  let target = targets.get(url);
  if (target === undefined) {
    const parsed = new URL(url);
    target = { origin: parsed.origin, path: `${parsed.pathname}${parsed.search}` };
    if (targets.size >= 1000) targets.clear();
    targets.set(url, target);
  }
  return target;
}

const one = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value);

/**
 * One POST under way: undici's handler, the promise's settler and the {@link PostHandle} in
 * one object (no closure per callback).
 */
class Exchange implements Dispatcher.DispatchHandler, PostHandle {
  #answer: PostAnswer | undefined;
  #read = 0;
  #done = false;
  #controller: Dispatcher.DispatchController | undefined;
  /** Why it was cut before undici started it, if it was. */
  #cutFor: Error | undefined;
  readonly #bodyLimit: number;
  readonly #deadlines: DeadlineWatch | undefined;
  readonly #resolve: (answer: PostAnswer) => void;
  readonly #reject: (error: Error) => void;

  constructor(
    options: PostOptions,
    resolve: (answer: PostAnswer) => void,
    reject: (error: Error) => void,
  ) {
    this.#bodyLimit = options.bodyLimit;
    this.#resolve = resolve;
    this.#reject = reject;
    if (options.watch !== undefined) {
      this.#deadlines = options.watch.deadlines;
      this.#deadlines.watch(this, options.watch.deadline);
    }
  }

  cut(reason: Error): void {
    if (this.#controller === undefined) this.#cutFor = reason;
    else this.#controller.abort(reason);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#cutFor !== undefined) controller.abort(this.#cutFor);
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    status: number,
    headers: IncomingHttpHeaders,
  ): void {
    if (status < 200) return; // informational: the answer is still to come
    this.#answer = { status, retryAfter: one(headers['retry-after']) };
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.#read += chunk.length;
    if (this.#read > this.#bodyLimit) controller.abort(new Error('The answer is too large.'));
  }

  onResponseEnd(): void {
    this.#settle();
  }

  onResponseError(_controller: Dispatcher.DispatchController | undefined, error: Error): void {
    this.#settle(error);
  }

  #settle(error?: Error): void {
    if (this.#done) return;
    this.#done = true;
    this.#deadlines?.unwatch(this);
    if (this.#answer !== undefined) this.#resolve(this.#answer);
    else this.#reject(error ?? new Error('The exchange ended without an answer.'));
  }
}

/**
 * POSTs `body` to `url` through `dispatcher` and settles with the answer's status once its
 * body has been read and thrown away (so the connection is reused), or with the error that
 * ended the exchange before an answer. Redirects are not followed. It drives undici's
 * `dispatch` with a handler of its own rather than `undici.request`: no response stream, no
 * header object beyond the one undici builds, no promise per body: a webhook sender needs
 * the status alone.
 */
export function post(
  url: string,
  headers: Record<string, string>,
  body: string,
  options: PostOptions,
): Promise<PostAnswer> {
  const { dispatcher } = options;
  if (dispatcher instanceof Promise) {
    return dispatcher.then((ready) => post(url, headers, body, { ...options, dispatcher: ready }));
  }
  const { origin, path } = targetOf(url);
  return new Promise((resolve, reject) => {
    const exchange = new Exchange(options, resolve, reject);
    dispatcher.dispatch(
      {
        origin,
        path,
        method: 'POST',
        headers,
        body,
        headersTimeout: options.timeout,
        bodyTimeout: options.timeout,
      },
      exchange,
    );
  });
}

/** Why a {@link DeadlineWatch} cut an exchange: read as a timeout. */
const timedOut = () =>
  new DOMException('The attempt took longer than its timeout.', 'TimeoutError');

/**
 * Cuts the exchanges still under way when their time is up, with one timer for all of a
 * sender's attempts (a timer each costs more than the rest of an attempt's bookkeeping). It
 * ticks every quarter of the timeout, at most every second, while anything is watched, so an
 * exchange is cut at most that late.
 */
export class DeadlineWatch {
  readonly #deadlines = new Map<PostHandle, number>();
  readonly #everyMs: number;
  #timer: NodeJS.Timeout | undefined;

  constructor(timeout: number) {
    this.#everyMs = Math.max(1, Math.min(1000, Math.floor(timeout / 4)));
  }

  /** Watches an exchange until `unwatch`, cutting it once `deadline` (`performance.now()`) passes. */
  watch(exchange: PostHandle, deadline: number): void {
    this.#deadlines.set(exchange, deadline);
    if (this.#timer === undefined) {
      this.#timer = setInterval(() => this.#check(), this.#everyMs);
      this.#timer.unref();
    }
  }

  unwatch(exchange: PostHandle): void {
    this.#deadlines.delete(exchange);
  }

  #check(): void {
    const now = performance.now();
    for (const [exchange, deadline] of this.#deadlines) {
      if (deadline > now) continue;
      this.#deadlines.delete(exchange);
      exchange.cut(timedOut());
    }
    if (this.#deadlines.size === 0) {
      clearInterval(this.#timer);
      this.#timer = undefined;
    }
  }
}
