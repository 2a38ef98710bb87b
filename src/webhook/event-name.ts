// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it rejects.
const EVENT_NAME = /^[^\u0000-\u001f\u007f]{1,200}$/;

/** Refuses an event name that is not 1–200 characters without control characters. */
export function assertEventName(event: unknown): asserts event is string {
  if (typeof event !== 'string' || !EVENT_NAME.test(event)) {
    throw new TypeError('The event name must be 1–200 characters without control characters.');
  }
}

/** Refuses an endpoint's `events` unless unset or up to 100 valid event names. */
export function assertEventNames(events: unknown): asserts events is readonly string[] | undefined {
  if (events === undefined) return;
  if (
    !Array.isArray(events) ||
    events.length > 100 ||
    events.some((e) => typeof e !== 'string' || !EVENT_NAME.test(e))
  ) {
    throw new TypeError('`events` must be up to 100 event names of 1–200 characters.');
  }
}
