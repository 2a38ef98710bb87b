// examples/next built and started by Next.js itself (`next build`, `next start`: its own
// request handling, App Router, Node runtime) in a project that installed the packed package,
// then called over real sockets: the route handlers are portico/fetch handlers.
import type { ChildProcess } from 'node:child_process';
import { cpSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_API_KEY } from '../../examples/next/lib/portico.js';
import { expectProblem, json, request } from '../helpers/http.js';
import { installConsumer, pack, root, run, write } from '../helpers/packed.js';
import { freePort, spawnReady } from '../helpers/process.js';
import { connect as connectStream, parseEvents } from '../helpers/sse.js';

let work: string | undefined;
let next: ChildProcess | undefined;
let port: number;

beforeAll(async () => {
  const packed = await pack('portico-next-');
  work = packed.work;
  const app = join(work, 'app');
  cpSync(join(root, 'examples/next'), app, { recursive: true });
  await installConsumer(packed.tarball, app, [
    'next',
    'react',
    'react-dom',
    '@next/swc-linux-x64-gnu',
    'typescript',
    '@types/react',
    '@types/node',
  ]);
  // the test's node_modules are links into the repository's: Turbopack compiles nothing outside
  // its root, so the root is widened to take them in (an installed app needs no such line)
  write(
    join(app, 'next.config.mjs'),
    "export default { serverExternalPackages: ['portico'], poweredByHeader: false, turbopack: { root: '/' } };\n",
  );
  const env = { ...process.env, NEXT_TELEMETRY_DISABLED: '1' };
  const nextBin = join(app, 'node_modules', 'next', 'dist', 'bin', 'next');
  await run(process.execPath, [nextBin, 'build'], app, 240_000);
  port = await freePort();
  next = await spawnReady(
    [nextBin, 'start', '-p', String(port), '-H', '127.0.0.1'],
    { cwd: app, env },
    'Ready',
  );
}, 300_000);

afterAll(() => {
  next?.kill('SIGTERM');
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('examples/next under next start', () => {
  it('answers /api/me with the key owner, and 401 with a challenge without a key', async () => {
    const me = await request(port, '/api/me', { headers: { 'x-api-key': DEMO_API_KEY } });
    expect(me.status).toBe(200);
    expect(json(me)).toEqual({ sub: 'demo' });
    expect(me.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(me.headers['x-content-type-options']).toBe('nosniff');
    expect(me.headers['x-powered-by']).toBeUndefined(); // poweredByHeader: false
    const refused = await request(port, '/api/me');
    expectProblem(refused, 401);
    expect(refused.headers['www-authenticate']).toMatch(/^ApiKey/);
  });

  it('reads a posted message once, refuses a bad one as a problem, and streams the good one', async () => {
    const stream = await connectStream({ port }, '/api/events', { 'x-api-key': DEMO_API_KEY });
    try {
      expect(stream.status).toBe(200);
      expect(String(stream.headers['content-type'])).toMatch(/^text\/event-stream/);
      const post = (body: string, type = 'application/json') =>
        request(port, '/api/messages', {
          method: 'POST',
          headers: { 'content-type': type, 'x-api-key': DEMO_API_KEY },
          body,
        });
      expectProblem(await post('{"text":""}'), 422);
      expectProblem(await post('hello', 'text/plain'), 415);
      expectProblem(await post('{"text":'), 400);
      const sent = await post('{"text":"hello, next"}');
      expect(sent.status).toBe(201);
      const events = parseEvents(await stream.until((t) => parseEvents(t).length > 0, 5000));
      expect(events).toMatchObject([
        { event: 'message', data: '{"from":"demo","text":"hello, next"}' },
      ]);
    } finally {
      stream.destroy();
    }
  });

  it('throttles guessing: 10 wrong keys, then the right one is 429 too', async () => {
    for (let i = 0; i < 10; i++) {
      const wrong = await request(port, '/api/me', { headers: { 'x-api-key': `guess-${i}` } });
      expectProblem(wrong, 401);
    }
    const right = await request(port, '/api/me', { headers: { 'x-api-key': DEMO_API_KEY } });
    expectProblem(right, 429);
    expect(Number(right.headers['retry-after'])).toBeGreaterThan(0);
  });
});
