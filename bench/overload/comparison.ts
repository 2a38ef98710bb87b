import type { Comparison } from '../lib/types.js';
import { sameBytesFloor } from '../lib/verify.js';
import { BLOCK_MS, PERIOD_MS } from './shared.js';

/** Load shedding: a blocked event loop, with and without `shedLoad()`. */
export const overloadComparison: Comparison = {
  name: 'overload',
  title: 'a periodically blocked event loop, with and without load shedding',
  description:
    '`GET /api/hello` (request id + security headers + router) on a server whose event loop ' +
    `is blocked for ${BLOCK_MS} ms every ${PERIOD_MS} ms while it is under load (a synchronous ` +
    'task, as a large JSON parse would be). Without shedding, every request that arrives during ' +
    'a block waits for it. With `shedLoad({ maxEventLoopDelay: 50, sampleInterval: 20 })` first ' +
    'in the chain, the requests queued behind a block are answered 503 with `Retry-After` at ' +
    'once, before any other middleware, and the next sample takes requests again: the share of ' +
    '503s is what the shedding costs the clients, the latency what it saves them.',
  baseline: 'portico',
  allowStatuses: [503],
  servers: [
    sameBytesFloor('portico'),
    { name: 'portico', label: 'portico, no shedding', entry: 'bench/overload/portico.ts' },
    {
      name: 'portico-shed',
      label: 'portico + shedLoad()',
      entry: 'bench/overload/portico-shed.ts',
    },
  ],
  request: { method: 'GET', path: '/api/hello', headers: {} },
  expect: { status: 200, body: '{"hello":"world"}' },
  notes: [
    'Both servers block the same way: the block starts once 200 requests arrived in the last ' +
      'period, so the check before measuring (a handful of requests) is never blocked.',
    'A 503 here is an answer, not a fault: the table counts it in req/s and gives its share.',
    'With 50 connections, one block holds about 50 requests of the ~10,000 of a period: the ' +
      'p99 does not reach them (they are the slowest 0.5 %), so the latency columns barely ' +
      'move; the shedding shows in the 503 share, the requests that arrived during a block or ' +
      'before the next sample (every 20 ms) found the loop well again.',
  ],
};
