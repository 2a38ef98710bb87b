// WebSocket clients of a spawned reference server, with bounded waits (the fault suites).
import WebSocket from 'ws';

/** A `/ws` client that keeps what it receives and how it was closed. */
export interface LiveSocket {
  ws: WebSocket;
  received: Record<string, unknown>[];
  /** Resolves with the first unread message of `type` (removing it); rejects after `ms`. */
  next(type: string, ms?: number): Promise<Record<string, unknown>>;
  /** The close code, once closed (1006 for a dropped connection). */
  closed: Promise<number>;
}

/** Opens `/ws` on `baseUrl` with `headers`; rejects when the upgrade fails or takes over 5 s. */
export async function openSocket(
  baseUrl: string,
  headers: Record<string, string>,
): Promise<LiveSocket> {
  const ws = new WebSocket(`${baseUrl.replace(/^http/, 'ws')}/ws`, { headers });
  const received: Record<string, unknown>[] = [];
  ws.on('message', (data) => received.push(JSON.parse(String(data))));
  const closed = new Promise<number>((resolve) =>
    ws.once('close', (code: number) => resolve(code)),
  );
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the WebSocket did not open in 5 s')), 5000);
    ws.once('open', () => {
      clearTimeout(timer);
      resolve();
    });
    ws.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
  ws.on('error', () => {});
  return {
    ws,
    received,
    closed,
    async next(type, ms = 5000) {
      const deadline = Date.now() + ms;
      while (Date.now() < deadline) {
        const found = received.findIndex((m) => m.type === type);
        if (found !== -1) return received.splice(found, 1)[0]!;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      throw new Error(`no "${type}" message within ${ms} ms; got ${JSON.stringify(received)}`);
    },
  };
}

/** Resolves with `promise`, or rejects once `ms` have passed. */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
