import { request } from 'node:http';
import { mergeHeaders } from './headers.js';
import type { Answer, Comparison, ServerSpec } from './types.js';

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
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
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
