// A minimal event-stream client over a real socket, for the SSE suites.
import { type IncomingHttpHeaders, type OutgoingHttpHeaders, request } from 'node:http';
import type { Listening } from './http.js';

/** A client reading an event stream over a real socket. */
export interface Client {
  status: number;
  headers: IncomingHttpHeaders;
  text(): string;
  /** Resolves with the text read so far once `done(text)` holds; rejects after `ms`. */
  until(done: (text: string) => boolean, ms?: number): Promise<string>;
  /** Resolves when the server ends or drops the connection. */
  ended: Promise<void>;
  destroy(): void;
}

export function connect(
  target: Pick<Listening, 'port'>,
  path = '/',
  headers?: OutgoingHttpHeaders,
): Promise<Client> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: target.port, path, headers, agent: false });
    req.on('error', reject);
    req.on('response', (res) => {
      let text = '';
      const waiters = new Set<() => void>();
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
        for (const waiter of waiters) waiter();
      });
      const ended = new Promise<void>((done) => res.on('close', done));
      res.on('error', () => {});
      resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        text: () => text,
        ended,
        destroy: () => req.destroy(),
        until(done, ms = 2000) {
          return new Promise((ok, fail) => {
            const check = () => {
              if (!done(text)) return;
              waiters.delete(check);
              clearTimeout(timer);
              ok(text);
            };
            const timer = setTimeout(() => {
              waiters.delete(check);
              fail(new Error(`timed out; read ${JSON.stringify(text.slice(0, 300))}`));
            }, ms);
            waiters.add(check);
            check();
          });
        },
      });
    });
    req.end();
  });
}

/** The events in a stream's text, as `{ id?, event?, data? }` (comments and `retry` skipped). */
export function parseEvents(text: string): { id?: string; event?: string; data?: string }[] {
  const events: { id?: string; event?: string; data?: string }[] = [];
  for (const block of text.split('\n\n').slice(0, -1)) {
    const event: { id?: string; event?: string; data?: string } = {};
    for (const line of block.split('\n')) {
      const colon = line.indexOf(':');
      if (colon <= 0) continue;
      const field = line.slice(0, colon);
      const value = line.slice(colon + 1).replace(/^ /, '');
      if (field === 'id' || field === 'event') event[field] = value;
      else if (field === 'data')
        event.data = event.data === undefined ? value : `${event.data}\n${value}`;
    }
    if (event.data !== undefined || event.event !== undefined) events.push(event);
  }
  return events;
}
