/**
 * The load generator, one child process per measurement so the orchestrator stays idle:
 * `node --import tsx bench/lib/load.ts '<LoadOptions as JSON>'` runs autocannon once and
 * prints one JSON line (a LoadResult).
 */
import autocannon from 'autocannon';
import type { LoadOptions, LoadResult } from './types.js';

function parseOptions(text: string | undefined): LoadOptions {
  if (text === undefined) throw new Error('usage: load.ts <LoadOptions as JSON>');
  const o = JSON.parse(text) as LoadOptions;
  if (typeof o.url !== 'string' || !o.url.startsWith('http://127.0.0.1:')) {
    throw new Error('load.ts: the url must be on http://127.0.0.1');
  }
  for (const key of ['connections', 'pipelining', 'durationSeconds'] as const) {
    if (!Number.isInteger(o[key]) || o[key] < 1 || o[key] > 600) {
      throw new Error(`load.ts: \`${key}\` must be an integer from 1 to 600`);
    }
  }
  return o;
}

const options = parseOptions(process.argv[2]);
const result = await autocannon({
  url: options.url,
  method: options.method,
  headers: options.headers,
  ...(options.body !== undefined && { body: options.body }),
  connections: options.connections,
  pipelining: options.pipelining,
  duration: options.durationSeconds,
  timeout: 10,
});

const statusCodes: Record<string, number> = {};
for (const [code, { count }] of Object.entries(result.statusCodeStats ?? {})) {
  statusCodes[code] = Number(count);
}
const output: LoadResult = {
  requests: result.requests.total,
  durationSeconds: result.duration,
  reqPerSec: result.requests.total / result.duration,
  latencyP50Ms: result.latency.p50,
  latencyP99Ms: result.latency.p99,
  latencyAvgMs: result.latency.average,
  non2xx: result.non2xx,
  errors: result.errors,
  timeouts: result.timeouts,
  statusCodes,
};
process.stdout.write(`${JSON.stringify(output)}\n`);
