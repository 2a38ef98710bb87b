/**
 * The mixed REST soak scenario, parameterised by duration (rest.test.ts: the short form in
 * `npm test`; rest.soak.ts: the long one in `npm run test:soak`).
 *
 * The reference server (`npm start`, in its own process, DEMO_API_KEY set and RATE_LIMIT high
 * enough never to answer 429) under autocannon for T seconds, as fast as the machine answers
 * with `connections` connections, one request at a time each (no pipelining: each request
 * needs the previous answer). Every connection loops over:
 *   1. `POST /api/messages` → 201, with the message's id and ETag;
 *   2. `GET /api/messages/{id}` with `If-None-Match: <that ETag>` → 304;
 *   3. `GET /api/messages?channel=soak-list` (20 messages, posted before the run) → 200;
 *   4. `GET /api/messages/{id}` with `If-None-Match` again → 304.
 * Asserted: no 5xx, no other status than these, every answer the one its request expects, no
 * connection error, timeout or aborted sequence. The latency percentiles (every answer) and
 * the rate are printed and written to test-results/soak/rest-<form>.json.
 */
import autocannon, { type Result } from 'autocannon';
import { afterAll, describe, expect, it } from 'vitest';
import { type RunningServer, startReferenceServer } from '../examples/spawn-server.js';
import { writeResult } from './harness.js';

export interface RestSoakParams {
  form: 'short' | 'long';
  seconds: number;
  connections: number;
}

const DEMO_KEY = 'demo-key-of-the-soak-suite-0123456789abcdef';
const AUTH = { 'X-API-Key': DEMO_KEY };
const JSON_BODY = { ...AUTH, 'Content-Type': 'application/json' };
const LIST_CHANNEL = 'soak-list';
const LIST_SIZE = 20;

/** What each connection remembers between the requests of one loop. */
interface Context {
  id?: string;
  etag?: string;
}

/** One request of autocannon's `requests` sequence (its types in bench/ omit them). */
interface SequenceRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
  setupRequest?: (request: SequenceRequest, context: Context) => SequenceRequest | undefined;
  onResponse?: (
    status: number,
    body: string,
    context: Context,
    headers: Record<string, string | string[]>,
  ) => void;
}

type Run = (options: {
  url: string;
  connections: number;
  pipelining: number;
  duration: number;
  timeout: number;
  requests: SequenceRequest[];
}) => Promise<Result & { resets?: number; '5xx'?: number }>;

type Kind = 'create' | 'conditional' | 'list';
const EXPECTED: Record<Kind, number> = { create: 201, conditional: 304, list: 200 };

function header(headers: Record<string, string | string[]>, name: string): string | undefined {
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === name) return Array.isArray(value) ? value[0] : value;
  }
  return undefined;
}

export function restSoak(p: RestSoakParams): void {
  describe(`REST soak (${p.form}): mixed load for ${p.seconds} s`, () => {
    let server: RunningServer | undefined;

    afterAll(async () => {
      await server?.stop();
    }, 30_000);

    it(
      'POST, conditional GET and list at full rate: no 5xx, no connection error, every answer as expected; p99 recorded',
      async () => {
        const started = performance.now();
        server = await startReferenceServer(
          { DEMO_API_KEY: DEMO_KEY, RATE_LIMIT: '1000000000', RATE_LIMIT_WINDOW: '60' },
          30_000,
        );
        const { url } = server;
        for (let i = 0; i < LIST_SIZE; i++) {
          const res = await fetch(`${url}/api/messages`, {
            method: 'POST',
            headers: JSON_BODY,
            body: JSON.stringify({ text: `listed ${i}`, channel: LIST_CHANNEL }),
          });
          expect(res.status).toBe(201);
        }

        const seen: Record<Kind, Record<string, number>> = {
          create: {},
          conditional: {},
          list: {},
        };
        const count = (kind: Kind, status: number) => {
          seen[kind][status] = (seen[kind][status] ?? 0) + 1;
        };
        let badBodies = 0;
        const conditional: SequenceRequest = {
          method: 'GET',
          path: '/api/messages/unset',
          headers: AUTH,
          setupRequest: (request, context) =>
            context.id === undefined || context.etag === undefined
              ? undefined
              : {
                  ...request,
                  path: `/api/messages/${context.id}`,
                  headers: { ...AUTH, 'If-None-Match': context.etag },
                },
          onResponse: (status) => count('conditional', status),
        };
        const requests: SequenceRequest[] = [
          {
            method: 'POST',
            path: '/api/messages',
            headers: JSON_BODY,
            body: JSON.stringify({ text: 'soak', channel: 'soak-posts' }),
            onResponse: (status, body, context, headers) => {
              count('create', status);
              if (status !== 201) return;
              try {
                context.id = (JSON.parse(String(body)) as { id?: string }).id;
              } catch {
                badBodies++;
              }
              context.etag = header(headers, 'etag');
              if (context.id === undefined || context.etag === undefined) badBodies++;
            },
          },
          conditional,
          {
            method: 'GET',
            path: `/api/messages?channel=${LIST_CHANNEL}`,
            headers: AUTH,
            onResponse: (status, body) => {
              count('list', status);
              if (status !== 200) return;
              try {
                if ((JSON.parse(String(body)) as unknown[]).length !== LIST_SIZE) badBodies++;
              } catch {
                badBodies++;
              }
            },
          },
          { ...conditional },
        ];

        const run = autocannon as unknown as Run;
        const result = await run({
          url,
          connections: p.connections,
          pipelining: 1,
          duration: p.seconds,
          timeout: 10,
          requests,
        });

        const statusCodes: Record<string, number> = {};
        for (const [code, { count: n }] of Object.entries(result.statusCodeStats ?? {})) {
          statusCodes[code] = Number(n);
        }
        const total = Object.values(statusCodes).reduce((a, b) => a + b, 0);
        const summary = {
          scenario: 'rest',
          form: p.form,
          params: p,
          ms: { total: Math.round(performance.now() - started) },
          durationSeconds: result.duration,
          requests: total,
          requestsPerSecond: Math.round(total / result.duration),
          latencyMs: {
            p50: result.latency.p50,
            p90: result.latency.p90,
            p99: result.latency.p99,
            max: result.latency.max,
            average: result.latency.average,
          },
          statusCodes,
          byRequest: seen,
          errors: result.errors,
          timeouts: result.timeouts,
          resets: result.resets ?? 0,
          mismatches: result.mismatches,
          badBodies,
        };
        const file = writeResult(`rest-${p.form}`, summary);
        console.log(
          `rest soak (${p.form}): ${total} requests in ${result.duration} s ` +
            `(${summary.requestsPerSecond}/s, ${p.connections} connections), latency p50 ` +
            `${summary.latencyMs.p50} ms, p99 ${summary.latencyMs.p99} ms, max ` +
            `${summary.latencyMs.max} ms; status ${JSON.stringify(statusCodes)}; ${file}`,
        );

        expect(Object.keys(statusCodes).filter((code) => code.startsWith('5'))).toEqual([]);
        expect({
          errors: result.errors,
          timeouts: result.timeouts,
          resets: summary.resets,
          badBodies,
        }).toEqual({ errors: 0, timeouts: 0, resets: 0, badBodies: 0 });
        for (const kind of Object.keys(EXPECTED) as Kind[]) {
          const statuses = Object.keys(seen[kind]).map(Number);
          expect(statuses, `${kind}: statuses`).toEqual([EXPECTED[kind]]);
        }
        // the sequence ran through: twice as many conditional GETs as creations, give or take
        // the loops cut short by the end of the run
        const created = seen.create[201] ?? 0;
        const revalidated = seen.conditional[304] ?? 0;
        expect(created).toBeGreaterThan(0);
        expect(revalidated).toBeGreaterThanOrEqual(2 * created - 2 * p.connections);
        expect(revalidated).toBeLessThanOrEqual(2 * created);
        expect(Number.isFinite(summary.latencyMs.p99)).toBe(true);
      },
      p.seconds * 1000 + 60_000,
    );
  });
}
