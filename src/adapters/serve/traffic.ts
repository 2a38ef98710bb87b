import type { ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { type Logger, log } from '../../core/logger.js';

/** What a graceful close waits for, and what a forced one ends. */
export interface Traffic {
  /** Counts `res` until it is closed. */
  count(res: ServerResponse): void;
  /** Counts `work` until it settles; a rejection is logged. */
  track<T>(work: Promise<T>): Promise<T>;
  /** Holds `socket` (handed to an upgrade or CONNECT handler) until it closes. */
  hold(socket: Duplex): void;
  /** The responses whose head is not sent yet will close their connection. */
  closeAfterAnswers(): void;
  /** Resolves once no request is being answered and no tracked work is pending. */
  drained(): Promise<void>;
  /** Ends every socket held (WebSockets, tunnels): the end of a forced close. */
  destroyHeld(): void;
}

/** The requests in flight, the work they started and the upgraded sockets of one service. */
export function createTraffic(logger: Logger): Traffic {
  const responses = new Set<ServerResponse>();
  const work = new Set<Promise<unknown>>();
  const held = new Set<Duplex>();
  const waiters: (() => void)[] = [];
  const settle = () => {
    if (responses.size > 0 || work.size > 0) return;
    for (const resolve of waiters.splice(0)) resolve();
  };
  // one shared listener each ('close' comes once): no closure per request
  function answered(this: ServerResponse) {
    responses.delete(this);
    settle();
  }
  function released(this: Duplex) {
    held.delete(this);
  }
  const failed = (err: unknown) =>
    log(
      logger,
      'error',
      { component: 'http', event: 'serve.work-failed', err },
      'tracked work failed',
    );
  return {
    count(res) {
      responses.add(res);
      res.once('close', answered);
    },
    track(promise) {
      work.add(promise);
      const done = () => {
        work.delete(promise);
        settle();
      };
      promise.then(done, (err: unknown) => {
        failed(err);
        done();
      });
      return promise;
    },
    hold(socket) {
      held.add(socket);
      socket.once('close', released);
    },
    closeAfterAnswers() {
      for (const res of responses) if (!res.headersSent) res.setHeader('Connection', 'close');
    },
    drained() {
      if (responses.size === 0 && work.size === 0) return Promise.resolve();
      return new Promise((resolve) => waiters.push(resolve));
    },
    destroyHeld() {
      for (const socket of held) socket.destroy();
    },
  };
}
