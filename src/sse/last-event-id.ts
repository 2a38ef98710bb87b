// The `Last-Event-ID` of a reconnecting event-stream client.
import type { IncomingMessage } from 'node:http';
import { hasLineBreak } from '../internal/grammar.js';
import { assertKnownOptions } from '../internal/options.js';

/** Options of {@link lastEventId}. */
export interface LastEventIdOptions {
  /**
   * Also read the ID from this query parameter when the header is absent (for clients
   * that cannot set headers on their first connection). Off unless given.
   * @defaultValue none: only the `Last-Event-ID` header is read
   */
  queryParameter?: string;
}

const LAST_EVENT_ID_OPTIONS = [
  'queryParameter',
] as const satisfies readonly (keyof LastEventIdOptions)[];

/**
 * The ID of the last event a reconnecting client saw: the `Last-Event-ID` header, or the
 * query parameter named by `queryParameter` when enabled; `undefined` when neither is there
 * or the value holds CR, LF or NUL.
 *
 * @example
 * ```ts
 * const since = lastEventId(req, { queryParameter: 'lastEventId' });
 * ```
 * @see {@link https://html.spec.whatwg.org/multipage/server-sent-events.html#last-event-id | HTML: Server-sent events, `Last-Event-ID`}
 */
export function lastEventId(
  req: IncomingMessage,
  options: LastEventIdOptions = {},
): string | undefined {
  assertKnownOptions('lastEventId()', options, LAST_EVENT_ID_OPTIONS);
  let value: string | undefined;
  const header = req.headers['last-event-id'];
  if (typeof header === 'string') value = header;
  else if (options.queryParameter !== undefined && req.url !== undefined) {
    const query = req.url.indexOf('?');
    if (query !== -1) {
      value =
        new URLSearchParams(req.url.slice(query + 1)).get(options.queryParameter) ?? undefined;
    }
  }
  if (value === undefined || hasLineBreak(value)) return undefined;
  return value;
}
