// The getting-started examples (examples/getting-started), run here over real sockets; the
// guides' own code blocks are checked by test/docs/code-blocks.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { DEMO_API_KEY, ORIGIN } from '../../examples/frameworks/shared.js';
import * as firstRoute from '../../examples/getting-started/first-route.js';
import * as gettingStarted from '../../examples/getting-started/server.js';
import { json, type Listening, listen, request } from '../helpers/http.js';
import { connect as connectStream, parseEvents } from '../helpers/sse.js';

describe('examples/getting-started/first-route.ts (step 1)', () => {
  let app: Awaited<ReturnType<typeof firstRoute.createApp>>;
  let listening: Listening;
  beforeAll(async () => {
    app = await firstRoute.createApp();
    listening = await listen(app.server);
  });
  afterAll(() => app.close());

  it('answers 401 with an ApiKey challenge, then 200 with the key', async () => {
    const refused = await request(listening, '/hello');
    expect(refused.status).toBe(401);
    expect(refused.headers['content-type']).toBe('application/problem+json');
    expect(refused.headers['www-authenticate']).toBe('ApiKey realm="api", header="X-API-Key"');
    const ok = await request(listening, '/hello', { headers: { 'x-api-key': DEMO_API_KEY } });
    expect(ok.status, ok.body).toBe(200);
    expect(json(ok)).toEqual({ hello: 'demo' });
    expect(
      (await request(listening, '/nowhere', { headers: { 'x-api-key': DEMO_API_KEY } })).status,
    ).toBe(404);
  });
});

describe('examples/getting-started/server.ts (steps 2 and 3)', () => {
  let app: Awaited<ReturnType<typeof gettingStarted.createApp>>;
  let listening: Listening;
  beforeAll(async () => {
    app = await gettingStarted.createApp({ limit: 5 });
    listening = await listen(app.server);
  });
  afterAll(async () => {
    if (app.server.listening) await app.close();
  });
  const withKey = { 'x-api-key': DEMO_API_KEY };
  const post = (text: string) =>
    request(listening, '/api/messages', {
      method: 'POST',
      headers: { ...withKey, 'content-type': 'application/json' },
      body: JSON.stringify({ text }),
    });

  it('sends security headers, a request id and CORS headers, even on errors', async () => {
    const refused = await request(listening, '/api/hello', { headers: { origin: ORIGIN } });
    expect(refused.status).toBe(401);
    expect(refused.headers['content-type']).toBe('application/problem+json');
    expect(refused.headers['x-content-type-options']).toBe('nosniff');
    expect(refused.headers['x-request-id']).toMatch(/\S/);
    expect(refused.headers['access-control-allow-origin']).toBe(ORIGIN);
    const preflight = await request(listening, '/api/hello', {
      method: 'OPTIONS',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'GET' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('answers bad input with a 422 problem listing the field', async () => {
    const reply = await post('');
    expect(reply.status).toBe(422);
    expect(json(reply).errors).toEqual([{ field: '/text', message: 'must be a non-empty string' }]);
  });

  it('streams and pushes a posted message, over SSE and the WebSocket channel', async () => {
    const stream = await connectStream(listening, '/api/events', withKey);
    const ws = new WebSocket(`ws://127.0.0.1:${listening.port}/ws`, {
      headers: { ...withKey, origin: ORIGIN },
    });
    const messages: Record<string, unknown>[] = [];
    ws.on('message', (data) => messages.push(JSON.parse(String(data))));
    try {
      await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
      ws.send(JSON.stringify({ type: 'subscribe', channel: 'messages', recover: true }));
      await expect.poll(() => messages[0]).toMatchObject({ type: 'subscribed' });
      expect((await post('hello')).status).toBe(201);
      const events = parseEvents(await stream.until((t) => parseEvents(t).length > 0));
      expect(events).toMatchObject([{ event: 'message', data: '{"from":"demo","text":"hello"}' }]);
      await expect
        .poll(() => messages.at(-1))
        .toMatchObject({ type: 'push', event: 'message', data: { from: 'demo', text: 'hello' } });
    } finally {
      stream.destroy();
      ws.close();
    }
  });

  it('refuses a WebSocket without a key before the upgrade', async () => {
    const status = await new Promise<number>((resolve) => {
      const ws = new WebSocket(`ws://127.0.0.1:${listening.port}/ws`);
      ws.on('error', () => {});
      ws.once('unexpected-response', (_req, res) => {
        resolve(res.statusCode ?? 0);
        res.resume();
        ws.terminate();
      });
    });
    expect(status).toBe(401);
  });

  it('answers 429 with Retry-After once the key has used its budget', async () => {
    let reply = await request(listening, '/api/hello', { headers: withKey });
    while (reply.status === 200)
      reply = await request(listening, '/api/hello', { headers: withKey });
    expect(reply.status).toBe(429);
    expect(reply.headers['content-type']).toBe('application/problem+json');
    expect(Number(reply.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(reply.headers['x-ratelimit-limit']).toBe('5');
  });
});
