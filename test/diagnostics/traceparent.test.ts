import { afterEach, describe, expect, it } from 'vitest';
import type { Middleware } from '../../src/core/compose.js';
import { getRequestId } from '../../src/core/context.js';
import { sendJson } from '../../src/core/send.js';
import { getTraceContext, parseTraceparent } from '../../src/diagnostics/index.js';
import { requestId } from '../../src/http/request-id.js';
import { closeAll, json, request, serve } from '../helpers/http.js';
import { captureLogger } from '../helpers/logger.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';
const TRACEPARENT = `00-${TRACE}-${SPAN}-01`;

afterEach(closeAll);

describe('parseTraceparent (W3C Trace Context)', () => {
  it('reads version 00: trace id, parent span id, sampled flag', () => {
    expect(parseTraceparent(TRACEPARENT)).toEqual({
      traceId: TRACE,
      spanId: SPAN,
      flags: '01',
      sampled: true,
    });
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-00`)?.sampled).toBe(false);
  });

  it('keeps a sane tracestate, and ignores it without a valid traceparent', () => {
    expect(
      parseTraceparent(TRACEPARENT, 'rojo=00f067aa0ba902b7,congo=t61rcWkgMzE')?.traceState,
    ).toBe('rojo=00f067aa0ba902b7,congo=t61rcWkgMzE');
    expect(parseTraceparent(TRACEPARENT, 'bad\u0001state')?.traceState).toBeUndefined();
    expect(parseTraceparent('garbage', 'rojo=1')).toBeUndefined();
  });

  it.each([
    ['all-zero trace id', `00-${'0'.repeat(32)}-${SPAN}-01`],
    ['all-zero span id', `00-${TRACE}-${'0'.repeat(16)}-01`],
    ['version ff', `ff-${TRACE}-${SPAN}-01`],
    ['upper-case hex', `00-${TRACE.toUpperCase()}-${SPAN}-01`],
    ['a short trace id', `00-${TRACE.slice(1)}-${SPAN}-01`],
    ['version 00 with a fifth field', `${TRACEPARENT}-extra`],
    ['an array (two headers)', [TRACEPARENT, TRACEPARENT]],
    ['nothing', undefined],
  ])('refuses %s', (_name, value) => {
    expect(parseTraceparent(value)).toBeUndefined();
  });

  it('reads the first four fields of a later version', () => {
    expect(parseTraceparent(`01-${TRACE}-${SPAN}-01-whatever`)?.traceId).toBe(TRACE);
  });
});

describe('requestId() and the trace context', () => {
  const echo: Middleware = (req, res) =>
    sendJson(res, 200, { requestId: getRequestId(req), trace: getTraceContext(req) ?? null });
  const app = [requestId(), echo];

  it('exposes traceparent through the context, and leaves X-Request-ID alone', async () => {
    const server = await serve(app);
    const reply = await request(server, '/', {
      headers: { traceparent: TRACEPARENT, tracestate: 'rojo=1', 'x-request-id': 'req-1' },
    });
    expect(reply.headers['x-request-id']).toBe('req-1');
    expect(json(reply)).toEqual({
      requestId: 'req-1',
      trace: { traceId: TRACE, spanId: SPAN, flags: '01', sampled: true, traceState: 'rojo=1' },
    });
  });

  it('a request without one (or with an invalid one) has no trace context', async () => {
    const server = await serve(app);
    for (const headers of [{}, { traceparent: 'not-a-traceparent' }]) {
      const body = json(await request(server, '/', { headers }));
      expect(body.trace).toBeNull();
      expect(body.requestId).toMatch(/^[0-9a-f-]{36}$/);
    }
  });

  it('reads no trace context from untrusted callers (trustIncoming: false)', async () => {
    const server = await serve([requestId({ trustIncoming: false }), echo]);
    const body = json(await request(server, '/', { headers: { traceparent: TRACEPARENT } }));
    expect(body.trace).toBeNull();
  });

  it('a 5xx is logged with the request id, trace id and span id', async () => {
    const log = captureLogger();
    const server = await serve(
      [
        requestId(),
        () => {
          throw new Error('boom');
        },
      ],
      { logger: log },
    );
    const reply = await request(server, '/things?api_key=secret-in-query', {
      headers: { traceparent: TRACEPARENT, 'x-request-id': 'req-2' },
    });
    expect(reply.status).toBe(500);
    expect(log.lines).toHaveLength(1);
    expect(log.lines[0]).toMatchObject({
      level: 'error',
      fields: {
        component: 'http',
        event: 'request.failed',
        method: 'GET',
        path: '/things',
        requestId: 'req-2',
        traceId: TRACE,
        spanId: SPAN,
      },
    });
    expect((log.errors[0] as Error).message).toBe('boom');
    expect(log.text()).not.toContain('secret-in-query');
  });
});
