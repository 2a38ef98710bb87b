import { request } from 'node:http';
import { mergeHeaders } from './headers.js';
import type { Answer, CapturedAnswer, Comparison, ServerSpec } from './types.js';

function fetchOnce(
  port: number,
  comparison: Comparison,
  headers: Record<string, string>,
): Promise<Answer> {
  const { method, path, body: requestBody } = comparison.request;
  const sent =
    requestBody === undefined
      ? headers
      : { ...headers, 'content-length': String(Buffer.byteLength(requestBody)) };
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, method, path, headers: sent, timeout: 5_000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const bytes = Buffer.concat(chunks);
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            rawHeaders: res.rawHeaders,
            body: bytes.toString('utf8'),
            bytes,
          });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error('no answer within 5 s')));
    req.on('error', reject);
    req.end(requestBody);
  });
}

/**
 * Sends the comparison's request once and checks status, body (or the comparison's `check`)
 * and the headers that prove the middleware ran, then each request the server must refuse
 * (401). Returns the problems found (none means the server is fit to measure). `variables`
 * are the comparison's setup variables, for `$NAME` in headers.
 */
export async function verifyServer(
  port: number,
  spec: ServerSpec,
  comparison: Comparison,
  variables: Readonly<Record<string, string>> = {},
): Promise<string[]> {
  const base = comparison.request.headers;
  const answer = await fetchOnce(
    port,
    comparison,
    mergeHeaders(base, spec.requestHeaders, variables),
  );
  const problems: string[] = [];
  if (answer.status !== comparison.expect.status) {
    problems.push(`status ${answer.status}, expected ${comparison.expect.status}`);
  }
  const body = spec.expectBody ?? comparison.expect.body;
  if (body !== undefined && answer.body !== body) {
    problems.push(`body ${JSON.stringify(answer.body)}, expected ${JSON.stringify(body)}`);
  }
  if (comparison.expect.check !== undefined) {
    problems.push(...(await comparison.expect.check(answer, { spec, port, variables })));
  }
  for (const headers of spec.refuses ?? []) {
    const refused = await fetchOnce(port, comparison, mergeHeaders(base, headers, variables));
    if (refused.status !== 401) {
      problems.push(`status ${refused.status} to ${JSON.stringify(headers)}, expected 401`);
    }
  }
  for (const [name, value] of Object.entries(spec.expectHeaders ?? {})) {
    const got = answer.headers[name];
    if (got !== value)
      problems.push(`header ${name}: ${JSON.stringify(got)}, expected ${JSON.stringify(value)}`);
  }
  return problems;
}

/** The header lines node writes itself, whatever the handler wrote. */
const NODE_WRITES = new Set(['date', 'connection', 'keep-alive', 'transfer-encoding']);

/**
 * The comparison's request answered once by the server on `port` (sent `headers`), as it
 * was sent: what its same-bytes floor then writes on every request.
 */
export async function captureAnswer(
  port: number,
  comparison: Comparison,
  headers: Record<string, string>,
): Promise<CapturedAnswer> {
  const answer = await fetchOnce(port, comparison, headers);
  const lines: string[] = [];
  for (let i = 0; i + 1 < answer.rawHeaders.length; i += 2) {
    const name = answer.rawHeaders[i]!;
    if (!NODE_WRITES.has(name.toLowerCase())) lines.push(name, answer.rawHeaders[i + 1]!);
  }
  if (answer.headers['content-length'] === undefined) {
    lines.push('Content-Length', String(answer.bytes.byteLength));
  }
  const { method, path } = comparison.request;
  const body = Buffer.from(answer.bytes).toString('base64');
  return { method, path, status: answer.status, headers: lines, body };
}

/**
 * Checks that the floor on `port` writes what it was given: the captured status, header lines
 * (but the request id, which is fresh) and body. Returns the problems found.
 */
export async function verifyFloor(
  port: number,
  comparison: Comparison,
  headers: Record<string, string>,
  captured: CapturedAnswer,
): Promise<string[]> {
  const again = await captureAnswer(port, comparison, headers);
  const problems: string[] = [];
  if (again.status !== captured.status)
    problems.push(`status ${again.status}, expected ${captured.status}`);
  const lines = (answer: CapturedAnswer) =>
    answer.headers.map((item, i) =>
      i % 2 === 1 && /^x-request-id$/i.test(answer.headers[i - 1]!) ? '<id>' : item,
    );
  if (JSON.stringify(lines(again)) !== JSON.stringify(lines(captured))) {
    problems.push(
      `header lines ${JSON.stringify(again.headers)}, expected ${JSON.stringify(captured.headers)}`,
    );
  }
  if (again.body !== captured.body) problems.push('a body other than the one captured');
  return problems;
}

/** The entry of every same-bytes floor. */
export const SAME_BYTES_ENTRY = 'bench/lib/same-bytes.ts';

/**
 * A row writing byte for byte what server `target` answers ({@link ServerSpec.sameBytesAs}).
 *
 * @example
 * ```ts
 * servers: [sameBytesFloor('portico'), { name: 'portico', label: 'portico', entry: '…' }],
 * ```
 */
export function sameBytesFloor(
  target: string,
  label = `node:http writing the same bytes as ${target} (the floor)`,
): ServerSpec {
  return { name: `${target}-bytes`, label, entry: SAME_BYTES_ENTRY, sameBytesAs: target };
}
