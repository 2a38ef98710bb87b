// serve(): a service on node:http over real sockets: 503 while starting (requests and WebSocket
// handshakes), then the app; node's parser refusals and CONNECT as problems with the edge's
// headers; a graceful close that drains, then a forced one after the grace; a port in use.
import { createServer, request as httpRequest, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { WebSocket } from 'ws';
import { ListenError, type Service, type ServiceApp, serve } from '../../../src/adapters/node.js';
import type { Logger } from '../../../src/core/logger.js';
import { sendJson } from '../../../src/core/send.js';
import { requestId } from '../../../src/http/request-id.js';
import { securityHeaders } from '../../../src/http/security-headers.js';
import { createUpgradeHandler } from '../../../src/ws/upgrade.js';
import { parseReply, rawRequest, request } from '../../helpers/http.js';

const edge = [requestId(), securityHeaders()];
const hello = [
  ...edge,
  (_req: IncomingMessage, res: Parameters<typeof sendJson>[0]) =>
    sendJson(res, 200, { hello: 'world' }),
];
const quiet = { port: 0, signals: [], edge } as const;

const running = new Set<Service>();
afterEach(async () => {
  await Promise.all([...running].map((service) => service.close()));
  running.clear();
});

function start(...args: Parameters<typeof serve>): Service {
  const service = serve(...args);
  running.add(service);
  return service;
}

function gate<T = void>() {
  let open!: (value: T) => void;
  const promise = new Promise<T>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

function recordingLogger() {
  const lines: { level: string; fields: Record<string, unknown> }[] = [];
  const at =
    (level: string) =>
    (fields: Record<string, unknown>): void => {
      lines.push({ level, fields });
    };
  const logger: Logger = {
    error: at('error'),
    warn: at('warn'),
    info: at('info'),
    debug: at('debug'),
    child: () => logger,
  };
  return { logger, lines };
}

/** A WebSocket handshake: 101 and the first message, or the refusal's status and headers. */
function handshake(url: string): Promise<{
  status: number;
  headers: IncomingMessage['headers'];
  body: string;
  message?: string;
}> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${url.replace('http', 'ws')}/ws`);
    ws.once('message', (data) => {
      resolve({ status: 101, headers: {}, body: '', message: String(data) });
      ws.close();
    });
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    ws.once('error', reject);
  });
}

describe('serve(): starting', () => {
  it('answers 503 with Retry-After and the edge headers until the app is built, then the app', async () => {
    const built = gate();
    const service = start(
      async ({ url }) => {
        await built.promise;
        return [...edge, (_req, res) => sendJson(res, 200, { url })];
      },
      { ...quiet, startingRetryAfter: 2_000 },
    );
    const { url } = await service.listening;
    expect(service.state).toBe('starting');
    const waiting = await request(url, '/anything');
    expect(waiting.status).toBe(503);
    expect(waiting.headers['retry-after']).toBe('2');
    expect(waiting.headers['content-type']).toBe('application/problem+json');
    expect(waiting.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(waiting.headers['x-content-type-options']).toBe('nosniff');
    expect(JSON.parse(waiting.body)).toMatchObject({
      status: 503,
      detail: 'The service is starting.',
      requestId: waiting.headers['x-request-id'],
    });
    built.open();
    expect(await service.ready).toEqual({
      url,
      host: '127.0.0.1',
      port: Number(new URL(url).port),
    });
    expect(service.state).toBe('serving');
    const answered = await request(url, '/anything');
    expect(answered.status).toBe(200);
    expect(JSON.parse(answered.body)).toEqual({ url });
  });

  it('refuses a WebSocket handshake 503 while starting, then hands it to the app', async () => {
    const built = gate();
    const service = start(async () => {
      await built.promise;
      return {
        listener: () => {},
        upgrade: createUpgradeHandler({ path: '/ws', onConnection: (ws) => ws.send('welcome') }),
      } satisfies ServiceApp;
    }, quiet);
    const { url } = await service.listening;
    const refused = await handshake(url);
    expect(refused.status).toBe(503);
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(refused.headers['x-frame-options']).toBe('DENY');
    expect(JSON.parse(refused.body)).toMatchObject({ status: 503, instance: '/ws' });
    built.open();
    await service.ready;
    expect(await handshake(url)).toMatchObject({ status: 101, message: 'welcome' });
  });

  it('serves an app given as middleware, or as a promise of one, with the edge', async () => {
    const service = start(Promise.resolve(hello), quiet);
    const { url } = await service.ready;
    const reply = await request(url, '/');
    expect(reply.status).toBe(200);
    expect(reply.headers['x-request-id']).toBeDefined();
  });

  it('rejects `ready` with what building threw, and closes', async () => {
    const service = start(async () => {
      throw new Error('no database');
    }, quiet);
    await expect(service.ready).rejects.toThrow('no database');
    await service.close();
    expect(service.state).toBe('closed');
    expect(service.server.listening).toBe(false);
  });
});

describe('serve(): what the app never sees', () => {
  it("answers what node's parser refuses as a problem with the edge headers", async () => {
    const service = start(hello, quiet);
    const { port } = await service.ready;
    const answer = parseReply(
      await rawRequest(port, 'GET /a b c\r\n\r\n', { tolerateReset: true }),
    );
    expect(answer.status).toBe(400);
    expect(answer.headers['content-type']).toBe('application/problem+json');
    expect(answer.headers['x-content-type-options']).toBe('nosniff');
    expect(JSON.parse(answer.body)).toMatchObject({
      status: 400,
      requestId: answer.headers['x-request-id'],
    });
  });

  it('answers CONNECT 501 with the edge headers, and closes', async () => {
    const service = start(hello, quiet);
    const { port } = await service.ready;
    const answer = parseReply(
      await rawRequest(port, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n'),
    );
    expect(answer.status).toBe(501);
    expect(answer.headers.connection).toBe('close');
    expect(answer.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('bounds header, request and keep-alive times by default', async () => {
    const service = start(hello, quiet);
    await service.ready;
    expect(service.server.headersTimeout).toBe(20_000);
    expect(service.server.requestTimeout).toBe(30_000);
    expect(service.server.keepAliveTimeout).toBe(5_000);
    const tuned = start(hello, { ...quiet, headersTimeout: 1_000, requestTimeout: 0 });
    expect(tuned.server.headersTimeout).toBe(1_000);
    expect(tuned.server.requestTimeout).toBe(0);
  });

  it('answers a request whose headers are too slow with a 408 problem', async () => {
    const service = start(hello, {
      ...quiet,
      headersTimeout: '200ms',
      requestTimeout: '200ms',
      // node checks the times every connectionsCheckingInterval (30 s by default)
      serverOptions: { connectionsCheckingInterval: 50 },
    });
    const { port } = await service.ready;
    const text = await rawRequest(port, 'GET / HTTP/1.1\r\nHost: x\r\n', { tolerateReset: true });
    const answer = parseReply(text);
    expect(answer.status).toBe(408);
    expect(answer.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('serve(): closing', () => {
  it('drains: stops accepting, answers the request in flight with Connection: close, then closes the app', async () => {
    const order: string[] = [];
    const held = gate();
    const reached = gate();
    const work = gate();
    const service = start(
      ({ track }) => ({
        listener: (req, res) => {
          if (req.url === '/slow') {
            reached.open();
            held.promise.then(() => {
              track(work.promise.then(() => order.push('work done')));
              res.end('done');
            });
          } else res.end('quick');
        },
        beforeDrain: () => {
          order.push('beforeDrain');
        },
        close: () => {
          order.push('close');
        },
      }),
      quiet,
    );
    const { port } = await service.ready;
    const slow = new Promise<{ headers: IncomingMessage['headers']; body: string }>(
      (resolve, reject) => {
        httpRequest({ port, host: '127.0.0.1', path: '/slow', agent: false }, (res) => {
          let body = '';
          res.on('data', (chunk: Buffer) => {
            body += chunk;
          });
          res.on('end', () => resolve({ headers: res.headers, body }));
        })
          .on('error', reject)
          .end();
      },
    );
    await reached.promise;
    const closed = service.close();
    expect(service.close()).toBe(closed);
    expect(service.state).toBe('closing');
    // no new connection is taken
    await expect(request(port, '/')).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    await vi.waitFor(() => expect(order).toEqual(['beforeDrain']));
    held.open();
    const answer = await slow;
    expect(answer.body).toBe('done');
    expect(answer.headers.connection).toBe('close');
    // the app's close waits for the work the request started
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(order).toEqual(['beforeDrain']);
    work.open();
    await closed;
    expect(order).toEqual(['beforeDrain', 'work done', 'close']);
    expect(service.state).toBe('closed');
  });

  it('closes every connection left at the end of the grace period, and resolves', async () => {
    const { logger, lines } = recordingLogger();
    const service = start(
      {
        listener: () => {}, // never answers
      },
      { ...quiet, gracePeriod: '200ms', logger },
    );
    const { port } = await service.ready;
    const hung = rawRequest(port, 'GET / HTTP/1.1\r\nHost: x\r\n\r\n', { tolerateReset: true });
    await vi.waitFor(async () => {
      const count = await new Promise<number>((resolve) =>
        service.server.getConnections((_e, n) => resolve(n)),
      );
      expect(count).toBe(1);
    });
    const started = Date.now();
    await service.close();
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(await hung).toBe('');
    expect(lines.filter((l) => l.level === 'warn').map((l) => l.fields.event)).toEqual([
      'serve.close-forced',
    ]);
  });

  it('closes an idle keep-alive connection at once', async () => {
    const service = start(hello, quiet);
    const { port } = await service.ready;
    const agent = new (await import('node:http')).Agent({ keepAlive: true });
    const reply = await request(port, '/', { agent });
    expect(reply.status).toBe(200);
    const started = Date.now();
    await service.close();
    expect(Date.now() - started).toBeLessThan(1_000);
    agent.destroy();
  });

  it('closes on a signal, calls onSignal, and leaves no listener behind', async () => {
    const before = process.listenerCount('SIGUSR2');
    const seen: string[] = [];
    const service = start(hello, {
      port: 0,
      signals: ['SIGUSR2'],
      exitOnSignal: false,
      onSignal: (signal) => seen.push(signal),
    });
    await service.ready;
    expect(process.listenerCount('SIGUSR2')).toBe(before + 1);
    process.emit('SIGUSR2', 'SIGUSR2');
    process.emit('SIGUSR2', 'SIGUSR2'); // a second one changes nothing
    await vi.waitFor(() => expect(service.state).toBe('closed'));
    expect(seen).toEqual(['SIGUSR2']);
    expect(process.listenerCount('SIGUSR2')).toBe(before);
  });
});

describe('serve(): listening', () => {
  it('says plainly that the port is in use, without a stack', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const { port } = taken.address() as AddressInfo;
    try {
      const service = start(hello, { ...quiet, port });
      const error = (await service.ready.catch((e: unknown) => e)) as ListenError;
      expect(error).toBeInstanceOf(ListenError);
      expect(error.message).toBe(
        `127.0.0.1:${port} is already in use: stop what listens there, or choose another port (port 0 picks a free one)`,
      );
      expect(error).toMatchObject({ code: 'EADDRINUSE', host: '127.0.0.1', port });
      expect(error.stack).toBe(`ListenError: ${error.message}`);
      await expect(service.listening).rejects.toBe(error);
      await service.close();
      expect(service.state).toBe('closed');
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });

  it('refuses unknown and inconsistent options when called', () => {
    expect(() => serve(hello, { gracePeriodMs: 1 } as never)).toThrow(
      /serve\(\): unknown option `gracePeriodMs`\. Did you mean `gracePeriod`\?/,
    );
    expect(() => serve(hello, { headersTimeout: 5_000, requestTimeout: 1_000 })).toThrow(
      /`headersTimeout` \(5000\) must not exceed `requestTimeout` \(1000\)/,
    );
    expect(() => serve(hello, { signals: ['TERM'] as never })).toThrow(/`signals`/);
    // a middleware or a request listener is not a builder: said so, with the fix
    const middleware = (_req: unknown, res: { end(): void }) => res.end();
    expect(() => serve(middleware as never)).toThrow(/give a middleware as \[middleware\]/);
    expect(() => serve({ listen: () => {} } as never)).toThrow(/the app must be/);
  });
});
