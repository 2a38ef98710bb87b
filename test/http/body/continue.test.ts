import { createServer } from 'node:http';
import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { toNodeListener } from '../../../src/adapters/node.js';
import { compose } from '../../../src/core/compose.js';
import { sendJson } from '../../../src/core/send.js';
import { readJson } from '../../../src/http/body/body.js';
import { createCheckContinueHandler } from '../../../src/http/body/continue.js';
import { closeAll, listen } from '../../helpers/http.js';

afterEach(closeAll);

/** Sends the head of a request with `Expect: 100-continue`; the body only once told to. */
function expecting(port: number, length: number, body: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    socket.on('data', (chunk) => {
      text += chunk.toString('latin1');
      if (text.startsWith('HTTP/1.1 100 Continue\r\n\r\n') && !socket.destroyed && body !== '') {
        socket.write(body);
        body = '';
      }
    });
    socket.on('end', () => resolve(text));
    socket.on('error', reject);
    socket.write(
      'POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
        `Content-Length: ${length}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n`,
    );
  });
}

describe('createCheckContinueHandler', () => {
  async function serve(limit?: number) {
    const listener = toNodeListener(
      compose([async (req, res) => sendJson(res, 200, await readJson(req, { limit: 64 }))]),
    );
    const server = createServer(listener);
    server.on('checkContinue', createCheckContinueHandler(listener, { limit: limit ?? 64 }));
    return (await listen(server)).port;
  }

  it('sends 100 Continue to a body within the limit, then the answer', async () => {
    const port = await serve();
    const body = '{"a":1}';
    const text = await expecting(port, body.length, body);
    expect(text.startsWith('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK')).toBe(true);
    expect(text.endsWith('{"a":1}')).toBe(true);
  });

  it('answers a declared body over the limit with the 413 at once, without 100 Continue', async () => {
    const port = await serve();
    const started = performance.now();
    const text = await expecting(port, 2_000_000, '');
    // at once: no wait for a body the client was never asked for (the reader's drain)
    expect(performance.now() - started).toBeLessThan(1500);
    expect(text.startsWith('HTTP/1.1 413 ')).toBe(true);
    expect(text).not.toContain('100 Continue');
    expect(text).toContain('application/problem+json');
  });

  it('refuses a bad limit or listener when built', () => {
    expect(() => createCheckContinueHandler(() => {}, { limit: -1 })).toThrow(TypeError);
    expect(() => createCheckContinueHandler(undefined as never)).toThrow(TypeError);
    expect(() => createCheckContinueHandler(() => {}, { limt: 1 } as never)).toThrow(TypeError);
  });
});
