/**
 * The same-bytes floor of a comparison: plain node:http writing, byte for byte, the answer a
 * server under test gave, captured by the orchestrator just before measuring
 * ({@link captureAnswer}) and handed over in `BENCH_SAME_BYTES`: its status, its header lines
 * in their order and case (a fresh `X-Request-ID` per request where it sent one), and its
 * body (a JSON body serialised per request, as every server does), in one
 * `writeHead(status, rawArray)` with nothing set before: node's fast path. The gap between a
 * server and its floor is what the server does beyond writing those bytes.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { serve } from './serve.js';
import { type CapturedAnswer, SAME_BYTES_VARIABLE } from './types.js';

function capturedAnswer(): CapturedAnswer {
  const json = process.env[SAME_BYTES_VARIABLE];
  if (json === undefined) {
    throw new Error(`${SAME_BYTES_VARIABLE} is not set: this floor runs under \`npm run bench\``);
  }
  return JSON.parse(json) as CapturedAnswer;
}

const answer = capturedAnswer();
const { method, path, status } = answer;
const lines = answer.headers.slice();
/** Where the request id's values are, to write a fresh one per request. */
const requestIdAt: number[] = [];
for (let i = 0; i < lines.length; i += 2) {
  if (lines[i]!.toLowerCase() === 'x-request-id') requestIdAt.push(i + 1);
}
/** The value of the captured field `lower`, if it has one. */
function field(lower: string): string | undefined {
  for (let i = 0; i < lines.length; i += 2)
    if (lines[i]!.toLowerCase() === lower) return lines[i + 1];
  return undefined;
}
const bytes = Buffer.from(answer.body, 'base64');
// an uncompressed JSON body is serialised per request, as the servers measured do
const isJson =
  field('content-encoding') === undefined &&
  /^application\/(?:[\w.+-]+\+)?json\b/i.test(field('content-type') ?? '');
const value: unknown = isJson ? JSON.parse(bytes.toString('utf8')) : undefined;
const body = () => (isJson ? JSON.stringify(value) : bytes);

serve(
  createServer((req, res) => {
    if (req.method !== method || req.url !== path) {
      res.writeHead(404, ['Content-Length', '0']);
      res.end();
      return;
    }
    const head = lines.slice();
    for (const at of requestIdAt) head[at] = randomUUID();
    res.writeHead(status, head);
    res.end(body());
  }),
);
