import { isCtlFreeName } from '../internal/grammar.js';

/** Refuses an event name that is not 1–200 characters without control characters. */
export function assertEventName(event: unknown): asserts event is string {
  if (!isCtlFreeName(event, 200)) {
    throw new TypeError('The event name must be 1–200 characters without control characters.');
  }
}

/** Refuses an endpoint's `events` unless unset or up to 100 valid event names. */
export function assertEventNames(events: unknown): asserts events is readonly string[] | undefined {
  if (events === undefined) return;
  if (!Array.isArray(events) || events.length > 100 || events.some((e) => !isCtlFreeName(e, 200))) {
    throw new TypeError('`events` must be up to 100 event names of 1–200 characters.');
  }
}
