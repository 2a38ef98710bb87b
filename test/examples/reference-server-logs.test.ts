// The reference server's "Observability" contract: a pino access log on stdout, LOG_LEVEL,
// the W3C trace context, never a secret (the full-run secrets check is secrets-not-logged).
import { afterEach, describe, expect, it } from 'vitest';
import { absoluteFormGet } from '../helpers/absolute-form.js';
import { type RunningServer, startReferenceServer } from './spawn-server.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';
const KEY = 'demo-logs-key-0123456789abcdef0123456789';

let server: RunningServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

interface AccessLine {
  level: number;
  time: number;
  msg: string;
  req: { id: string; method: string; url: string };
  res: { statusCode: number };
  responseTime: number;
  sub?: string;
  traceId?: string;
  spanId?: string;
}

/** The JSON lines of the output (the ready line and the demo key's are not JSON). */
function jsonLines(output: string): Record<string, unknown>[] {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** Waits (bounded) for the access-log line of the request with `id`. */
async function lineOf(running: RunningServer, id: string): Promise<AccessLine> {
  const end = Date.now() + 5_000;
  for (;;) {
    const line = jsonLines(running.output()).find(
      (l) => (l as unknown as AccessLine).req?.id === id,
    );
    if (line !== undefined) return line as unknown as AccessLine;
    if (Date.now() > end) throw new Error(`no access-log line for ${id}:\n${running.output()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('the reference server’s access log', () => {
  it('writes one pino line per finished request: id, method, path, status, time, sub, trace', async () => {
    server = await startReferenceServer({ DEMO_API_KEY: KEY });
    const traced = await fetch(`${server.url}/api/me?api_key=${KEY}&x=1`, {
      headers: {
        'X-API-Key': KEY,
        'X-Request-ID': 'req-traced',
        traceparent: `00-${TRACE}-${SPAN}-01`,
      },
    });
    expect(traced.status).toBe(200);
    // X-Request-ID is unchanged by the trace context
    expect(traced.headers.get('x-request-id')).toBe('req-traced');
    const line = await lineOf(server, 'req-traced');
    expect(line).toMatchObject({
      level: 30,
      msg: 'request completed',
      req: { id: 'req-traced', method: 'GET', url: '/api/me' },
      res: { statusCode: 200 },
      sub: 'alice',
      traceId: TRACE,
      spanId: SPAN,
    });
    expect(line.time).toBeGreaterThan(Date.now() - 60_000);
    expect(line.responseTime).toBeGreaterThanOrEqual(0);

    const anonymous = await fetch(`${server.url}/api/me`, {
      headers: { 'X-Request-ID': 'req-anon' },
    });
    expect(anonymous.status).toBe(401);
    const refused = await lineOf(server, 'req-anon');
    expect(refused.res.statusCode).toBe(401);
    expect(refused.sub).toBeUndefined();
    expect(refused.traceId).toBeUndefined();
    expect(server.output()).not.toContain(KEY.slice(10));
  });

  it('logs a target in absolute form by its path alone: no scheme, no userinfo, no query', async () => {
    server = await startReferenceServer({ DEMO_API_KEY: KEY });
    const port = Number(new URL(server.url).port);
    const userinfo = 'alice:alice-password';
    const proxied = await absoluteFormGet(port, `/api/me?api_key=${KEY}&x=1`, {
      userinfo,
      headers: { 'X-API-Key': KEY, 'X-Request-ID': 'req-absolute' },
    });
    expect(proxied.status).toBe(200);
    const missing = await absoluteFormGet(port, '/no/such/page?password=alice-password', {
      userinfo,
      headers: { 'X-Request-ID': 'req-absolute-404' },
    });
    expect(missing.status).toBe(404);
    // another scheme, and a fragment: node takes both, and so would a password in them
    const ftp = await absoluteFormGet(port, '/no/such/file#alice-password', {
      userinfo,
      scheme: 'ftp',
      headers: { 'X-Request-ID': 'req-absolute-ftp' },
    });
    expect(ftp.status).toBe(404);
    expect(ftp.body).not.toContain('alice-password');
    expect((await lineOf(server, 'req-absolute-ftp')).req.url).toBe('/no/such/file');
    expect(await lineOf(server, 'req-absolute')).toMatchObject({
      msg: 'request completed',
      req: { id: 'req-absolute', method: 'GET', url: '/api/me' },
      res: { statusCode: 200 },
      sub: 'alice',
    });
    expect((await lineOf(server, 'req-absolute-404')).req.url).toBe('/no/such/page');
    const output = server.output();
    for (const leaked of ['alice-password', KEY.slice(10), 'api_key', `127.0.0.1:${port}/`]) {
      expect(output).not.toContain(leaked);
    }
  });

  it('LOG_LEVEL=silent writes no log line; the ready line stays', async () => {
    server = await startReferenceServer({ DEMO_API_KEY: KEY, LOG_LEVEL: 'silent' });
    expect((await fetch(`${server.url}/api/me`, { headers: { 'X-API-Key': KEY } })).status).toBe(
      200,
    );
    // all the process will ever write: it is stopped, and its output read to the end (a line
    // of that request, or of the shutdown, would be in it)
    const { child } = server;
    const outputEnded = new Promise<void>((resolve) => {
      if (child.stdout?.readableEnded && child.stderr?.readableEnded) resolve();
      else child.once('close', () => resolve());
    });
    // a graceful stop (exit code 0): the logger flushed whatever it held on the way out
    expect(await server.stop()).toBe(0);
    await outputEnded;
    expect(jsonLines(server.output())).toEqual([]);
    expect(server.output()).toContain('listening on');
  });

  it('an unknown LOG_LEVEL stops the server at start, saying why', async () => {
    const failed = await startReferenceServer({ LOG_LEVEL: 'loud' }).catch((error) => error);
    expect(failed).toMatchObject({ code: 1 });
    expect(String(failed.out)).toContain('LOG_LEVEL must be one of');
  });
});
