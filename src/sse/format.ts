import { hasLineBreak, LINE_ENDING } from '../internal/grammar.js';

/**
 * One event of a `text/event-stream`, before formatting.
 *
 * @see {@link https://html.spec.whatwg.org/multipage/server-sent-events.html | HTML: Server-sent events}
 */
export interface ServerSentEvent {
  /**
   * The payload. JSON-encoded unless {@link FormatOptions.json} is `false`, in which case it
   * must be a string; each of its lines becomes its own `data:` line. Left out, the event
   * carries no data (an `id` alone still moves the client's last event ID).
   */
  data?: unknown;
  /** The event ID the client sends back as `Last-Event-ID`; no CR, LF or NUL. */
  id?: string | number;
  /** The event type (`addEventListener(type, …)` on the client); no CR, LF or NUL. */
  event?: string;
  /** The reconnection time the client should use from now on, in milliseconds. */
  retry?: number;
}

/**
 * Options of `formatEvent`.
 *
 * @see {@link https://html.spec.whatwg.org/multipage/server-sent-events.html | HTML: Server-sent events}
 */
export interface FormatOptions {
  /**
   * Encode `data` with `JSON.stringify`. With `false`, `data` must be a string and is sent
   * as it is (split into lines).
   * @defaultValue `true`
   */
  json?: boolean;
}

function invalid(message: string): TypeError {
  const error = new TypeError(message);
  (error as TypeError & { code: string }).code = 'ERR_INVALID_SSE_FIELD';
  return error;
}

function field(name: 'id' | 'event', value: unknown): string {
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value !== 'string') throw invalid(`SSE \`${name}\` must be a string`);
  if (hasLineBreak(value)) throw invalid(`SSE \`${name}\` must not contain CR, LF or NUL`);
  return value;
}

/** `data: …` lines of a text, one per line of it (CRLF, CR and LF all break a line). */
function dataLines(text: string): string {
  let out = '';
  for (const line of text.split(LINE_ENDING)) out += `data: ${line}\n`;
  return out;
}

/**
 * Formats one event for a `text/event-stream`: `event:`, `id:`, `retry:` and one `data:`
 * line per line of the (JSON-encoded by default) data, ended by a blank line. Refuses an
 * `id` or `event` holding CR, LF or NUL (which would forge fields or, for `id`, be ignored
 * by the client) with a `TypeError` whose `code` is `ERR_INVALID_SSE_FIELD`.
 *
 * @example
 * ```ts
 * formatEvent({ id: 7, event: 'message', data: { text: 'hi' } });
 * // 'event: message\nid: 7\ndata: {"text":"hi"}\n\n'
 * formatEvent({ data: 'two\nlines' }, { json: false });
 * // 'data: two\ndata: lines\n\n'
 * ```
 * @see {@link https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation | HTML: Server-sent events, interpreting an event stream}
 */
export function formatEvent(event: ServerSentEvent, options: FormatOptions = {}): string {
  if (event === null || typeof event !== 'object') throw invalid('SSE event must be an object');
  let out = '';
  if (event.event !== undefined) out += `event: ${field('event', event.event)}\n`;
  if (event.id !== undefined) out += `id: ${field('id', event.id)}\n`;
  if (event.retry !== undefined) {
    if (!Number.isSafeInteger(event.retry) || event.retry < 0) {
      throw invalid('SSE `retry` must be a non-negative integer of milliseconds');
    }
    out += `retry: ${event.retry}\n`;
  }
  if (event.data !== undefined) {
    let text: string | undefined;
    if (options.json === false) {
      if (typeof event.data !== 'string') {
        throw invalid('SSE `data` must be a string when `json` is false');
      }
      text = event.data;
    } else {
      text = JSON.stringify(event.data) as string | undefined;
      if (text === undefined) throw invalid('SSE `data` cannot be encoded as JSON');
    }
    out += dataLines(text);
  }
  if (out === '') throw invalid('SSE event needs at least one of data, id, event or retry');
  return `${out}\n`;
}

/**
 * Formats a comment (a line starting with `:`), which clients ignore: the stuff of
 * heartbeats that keep proxies from closing an idle stream. Each line of `text` becomes its
 * own comment line.
 *
 * @example
 * ```ts
 * formatComment('keep-alive'); // ': keep-alive\n\n'
 * ```
 * @see {@link https://html.spec.whatwg.org/multipage/server-sent-events.html#authoring-notes | HTML: Server-sent events, authoring notes}
 */
export function formatComment(text = ''): string {
  let out = '';
  for (const line of String(text).split(LINE_ENDING)) out += line === '' ? ':\n' : `: ${line}\n`;
  return `${out}\n`;
}
