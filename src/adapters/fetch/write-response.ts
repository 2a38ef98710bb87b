import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import { appendVary } from '../../internal/headers.js';
import { HOP_BY_HOP } from './response.js';

/**
 * Writes a Web `Response` (a Fetch-style handler's answer) through `res`, after what portico's
 * middleware put there: its fields win over those of the same name, `Vary` is merged and
 * `Set-Cookie` lines are added to those already set (a session's), then its body is written
 * as the reader of `res` takes it, and its reading stopped if `res` is destroyed.
 * @internal
 */
export async function writeResponse(res: ServerResponse, answer: Response): Promise<void> {
  if (!(answer instanceof Response)) {
    throw new TypeError('The handler must answer a Response.');
  }
  for (const [name, value] of answer.headers) {
    if (name === 'set-cookie' || HOP_BY_HOP.has(name)) continue;
    if (name === 'vary') appendVary(res, value);
    else res.setHeader(name, value);
  }
  const cookies = answer.headers.getSetCookie();
  if (cookies.length > 0) {
    const earlier = res.getHeader('set-cookie');
    const kept = earlier === undefined ? [] : Array.isArray(earlier) ? earlier : [String(earlier)];
    res.setHeader('set-cookie', [...kept, ...cookies]);
  }
  res.statusCode = answer.status;
  if (answer.statusText !== '') res.statusMessage = answer.statusText;
  if (answer.body === null) {
    res.end();
    return;
  }
  await pipeBody(res, answer.body);
}

/** Resolves after the reads already settled have run: a body made whole is read by then. */
const nextTurn = () => new Promise<undefined>((resolve) => setImmediate(() => resolve(undefined)));

/**
 * Writes `body` through `res`. A body that is whole from the start (a string, bytes, JSON)
 * is written with one `end()`, so that node gives it its `Content-Length`; any other is
 * streamed as it comes, the first chunk held no longer than one turn of the event loop.
 */
async function pipeBody(res: ServerResponse, body: ReadableStream<Uint8Array>): Promise<void> {
  const reader = body.getReader();
  const gone = () => reader.cancel().catch(() => {});
  res.once('close', gone);
  try {
    const reading = reader.read();
    // a body not ready at once is a stream: its head goes now, before its first bytes
    if ((await Promise.race([reading, nextTurn()])) === undefined) res.flushHeaders();
    const first = await reading;
    if (first.done) {
      res.end();
      return;
    }
    const pending = reader.read();
    const second = await Promise.race([pending, nextTurn()]);
    if (second?.done === true) {
      res.end(first.value);
      return;
    }
    if (!(await written(res, first.value))) return;
    let next = second ?? (await pending);
    while (!next.done) {
      if (!(await written(res, next.value))) return;
      next = await reader.read();
    }
    if (!res.destroyed) res.end();
  } catch (err) {
    if (!res.headersSent) throw err;
    res.destroy(err instanceof Error ? err : new Error(String(err)));
  } finally {
    res.off('close', gone);
  }
}

/** Writes `chunk`, waiting for `'drain'` when asked to; `false` once `res` is gone. */
async function written(res: ServerResponse, chunk: Uint8Array): Promise<boolean> {
  if (res.destroyed) return false;
  if (!res.write(chunk)) await Promise.race([once(res, 'drain'), once(res, 'close')]);
  return !res.destroyed;
}
