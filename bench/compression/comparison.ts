import { request } from 'node:http';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import type { Comparison } from '../lib/types.js';
import { sameBytesFloor } from '../lib/verify.js';
import { PATH, payload } from './body.js';

const ACCEPT_ENCODING = 'gzip, br';

/** The answer fetched again as bytes (the orchestrator's copy is decoded as UTF-8). */
function fetchBytes(port: number): Promise<{ headers: Record<string, unknown>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: PATH,
        headers: { 'accept-encoding': ACCEPT_ENCODING },
        timeout: 5_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('no answer within 5 s')));
    req.on('error', reject);
    req.end();
  });
}

/** Every server must answer Brotli that decodes to the same JSON, with `Vary`. */
async function checkCompressed(_answer: unknown, server: { port: number }): Promise<string[]> {
  const { headers, body } = await fetchBytes(server.port);
  const problems: string[] = [];
  if (headers['content-encoding'] !== 'br') {
    problems.push(`content-encoding ${JSON.stringify(headers['content-encoding'])}, expected br`);
  }
  if (!/accept-encoding/i.test(String(headers.vary ?? '')))
    problems.push('no Vary: Accept-Encoding');
  const coding = headers['content-encoding'];
  try {
    const decoded =
      coding === 'br' ? brotliDecompressSync(body) : coding === 'gzip' ? gunzipSync(body) : body;
    if (decoded.toString('utf8') !== JSON.stringify(payload()))
      problems.push('decoded body differs');
  } catch (err) {
    problems.push(`body does not decode: ${(err as Error).message}`);
  }
  return problems;
}

/** Compressing a ~20 KB JSON answer: bare node:http + zlib vs portico vs `compression`. */
export const compressionComparison: Comparison = {
  name: 'compression',
  title: 'compressing a 20 KB JSON answer',
  description:
    `\`GET ${PATH}\` answering a ~20 KB JSON list (the same bytes from every server, ` +
    '`JSON.stringify` per request), asked with `Accept-Encoding: gzip, br`: every server ' +
    'answers Brotli at quality 4 (both middlewares’ default for dynamic content), checked by ' +
    'decoding it. Bare node:http compresses by hand with `zlib.brotliCompress` and the exact ' +
    'Content-Length; portico runs `compression()` and a router under `toNodeListener`; the ' +
    '`compression` package (1.8, Express’s) runs on plain node:http. Target: portico at 90 % ' +
    'or more of bare node:http, and at least level with `compression`.',
  baseline: 'bare',
  secondaryBaseline: 'compression-npm',
  servers: [
    {
      name: 'bare',
      label: 'bare node:http + zlib.brotliCompress',
      entry: 'bench/compression/bare.ts',
    },
    sameBytesFloor('portico'),
    { name: 'portico', label: 'portico compression()', entry: 'bench/compression/portico.ts' },
    {
      name: 'compression-npm',
      label: 'node:http + compression (npm) 1.8',
      entry: 'bench/compression/compression-npm.ts',
    },
  ],
  request: { method: 'GET', path: PATH, headers: { 'accept-encoding': ACCEPT_ENCODING } },
  expect: { status: 200, check: checkCompressed },
  notes: [
    'Brotli costs far more CPU than the HTTP work around it, so the rows measure mostly ' +
      'zlib; what differs is how each hands the body to it. portico and bare node:http get the ' +
      'whole body in one `end()` and compress it in one call on libuv’s thread pool, sending ' +
      'an exact Content-Length; `compression` streams it through a `BrotliCompress` and sends ' +
      'it chunked.',
    'On this 2-core machine the thread pool (4 threads) and the event loop share the cores.',
  ],
};
