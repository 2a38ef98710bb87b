import type { HubListener, HubMessage } from './broker.js';

/**
 * Hands `message` to each listener (a snapshot, so listeners may unsubscribe meanwhile). A
 * listener that throws or rejects is reported to `onError`, and the others still get the
 * message; a reporter that throws is ignored. Shared by the brokers.
 * @internal
 */
export function deliverToListeners(
  listeners: Iterable<HubListener>,
  message: HubMessage,
  onError: (error: unknown, message: HubMessage) => void,
): void {
  const report = (error: unknown) => {
    try {
      onError(error, message);
    } catch {
      // an error reporter that throws must not break delivery either
    }
  };
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
