import { type Logger, log } from '../core/logger.js';
import type { HubListener, HubMessage } from './broker.js';

/**
 * Hands `message` to each listener (a snapshot, so listeners may unsubscribe meanwhile). A
 * listener that throws or rejects is logged (`error`, with the channel), and the others still
 * get the message. Shared by the brokers.
 * @internal
 */
export function deliverToListeners(
  listeners: Iterable<HubListener>,
  message: HubMessage,
  logger: Logger,
  component: string,
): void {
  const report = (error: unknown) =>
    log(
      logger,
      'error',
      { component, event: 'listener.failed', channel: message.channel, err: error },
      'a listener of a hub channel failed',
    );
  for (const listener of [...listeners]) {
    try {
      const result = listener(message);
      if (result !== undefined && typeof (result as Promise<void>).then === 'function') {
        (result as Promise<void>).then(undefined, report);
      }
    } catch (error) {
      report(error);
    }
  }
}
