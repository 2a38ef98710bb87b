// examples/opentelemetry: spans and metrics from portico's diagnostics channels, read back
// through the SDK's in-memory exporters.
import type { AddressInfo } from 'node:net';
import { propagation, type Tracer } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { instrumentPortico } from '../../examples/opentelemetry/instrumentation.js';
import { createService, SERVICE } from '../../examples/opentelemetry/server.js';
import { absoluteFormGet } from '../helpers/absolute-form.js';
import { request } from '../helpers/http.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';

const spans = new InMemorySpanExporter();
const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
const reader = new PeriodicExportingMetricReader({
  exporter: metricExporter,
  exportIntervalMillis: 60_000,
});
const meterProvider = new MeterProvider({ readers: [reader] });
const tracerProvider = new BasicTracerProvider({
  spanProcessors: [new SimpleSpanProcessor(spans)],
});
let service: Awaited<ReturnType<typeof createService>>;
let port: number;
let uninstrument: () => void;

beforeAll(async () => {
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  const tracer: Tracer = tracerProvider.getTracer('test');
  uninstrument = instrumentPortico({ tracer, meter: meterProvider.getMeter('test') });
  service = await createService();
  await new Promise<void>((resolve) => service.server.listen(0, '127.0.0.1', resolve));
  port = (service.server.address() as AddressInfo).port;
  await service.subscribeReceiver();
});

afterAll(async () => {
  uninstrument();
  await service.close();
  await meterProvider.shutdown();
  await tracerProvider.shutdown();
  propagation.disable();
});

/** Waits (bounded) until a finished span satisfies `match`. */
async function spanWhere(match: (span: ReadableSpan) => boolean): Promise<ReadableSpan> {
  const end = Date.now() + 5_000;
  for (;;) {
    const found = spans.getFinishedSpans().find(match);
    if (found !== undefined) return found;
    if (Date.now() > end) throw new Error('no such span');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('examples/opentelemetry', () => {
  it('a request is a server span, child of the caller’s traceparent, with its status', async () => {
    const reply = await request(port, '/api/me', {
      headers: { 'x-api-key': service.apiKey, traceparent: `00-${TRACE}-${PARENT}-01` },
    });
    expect(reply.status).toBe(200);
    const span = await spanWhere((s) => s.name === 'GET /api/me');
    expect(span.spanContext().traceId).toBe(TRACE);
    expect(span.parentSpanContext?.spanId).toBe(PARENT);
    expect(span.attributes).toMatchObject({
      'http.request.method': 'GET',
      'url.path': '/api/me',
      'http.response.status_code': 200,
    });
  });

  it('names a request in absolute form by its path alone: no userinfo, no query', async () => {
    const reply = await absoluteFormGet(port, `/api/me?api_key=${service.apiKey}`, {
      userinfo: 'alice:alice-password',
      headers: { 'X-API-Key': service.apiKey, traceparent: `00-${TRACE}-${'1'.repeat(16)}-01` },
    });
    expect(reply.status).toBe(200);
    const span = await spanWhere((s) => s.parentSpanContext?.spanId === '1'.repeat(16));
    expect(span.name).toBe('GET /api/me');
    expect(span.attributes['url.path']).toBe('/api/me');
    const text = JSON.stringify([span.name, span.attributes, span.events]);
    expect(text).not.toContain('alice-password');
    expect(text).not.toContain(service.apiKey);
  });

  it('a token issued is a span under its request’s span', async () => {
    const reply = await request(port, '/token', {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${SERVICE.clientId}:${SERVICE.secret}`).toString('base64')}`,
      },
      body: 'grant_type=client_credentials',
    });
    expect(reply.status).toBe(200);
    const token = await spanWhere((s) => s.name === 'oauth.token');
    const post = await spanWhere((s) => s.name === 'POST /token');
    expect(token.parentSpanContext?.spanId).toBe(post.spanContext().spanId);
    expect(token.attributes).toMatchObject({
      'oauth.outcome': 'issued',
      'oauth.grant_type': 'client_credentials',
      'oauth.client_id': SERVICE.clientId,
    });
    const text = JSON.stringify(spans.getFinishedSpans().map((s) => s.attributes));
    expect(text).not.toContain(SERVICE.secret);
    expect(text).not.toContain(JSON.parse(reply.body).access_token);
  });

  it('a webhook delivery is a client span', async () => {
    const reply = await request(port, '/api/orders', {
      method: 'POST',
      headers: { 'x-api-key': service.apiKey },
    });
    expect(reply.status).toBe(202);
    const delivery = await spanWhere((s) => s.name === 'webhook.deliver');
    expect(delivery.attributes).toMatchObject({
      'webhook.event_type': 'order.created',
      'webhook.attempt': 1,
      'http.response.status_code': 204,
    });
  });

  it('counts refused credentials and rate-limit hits', async () => {
    for (const headers of [{}, { 'x-api-key': 'ptk_wrong' }]) {
      expect((await request(port, '/api/me', { headers })).status).toBe(401);
    }
    let limited = 0;
    for (let i = 0; i < 8; i++) {
      const reply = await request(port, '/api/me', { headers: { 'x-api-key': service.apiKey } });
      if (reply.status === 429) limited++;
    }
    expect(limited).toBeGreaterThan(0);
    await reader.forceFlush();
    const exported = metricExporter.getMetrics().at(-1)!;
    const points = exported.scopeMetrics.flatMap((scope) => scope.metrics);
    const sum = (name: string) =>
      points
        .filter((m) => m.descriptor.name === name)
        .flatMap((m) => m.dataPoints as { value: unknown }[])
        .reduce((total, point) => total + (point.value as number), 0);
    expect(sum('portico.auth.refused')).toBe(2);
    expect(sum('portico.rate_limit.exceeded')).toBe(limited);
  });
});
