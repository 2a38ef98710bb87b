import { request } from 'node:http';
import type { Comparison, ServerSpec } from './types.js';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

function fetchOnce(port: number, comparison: Comparison): Promise<Answer> {
  const { method, path, headers } = comparison.request;
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, method, path, headers, timeout: 5_000 },
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
    req.end();
  });
}

/**
 * Sends the comparison's request once and checks status, body and the headers that prove
 * the middleware ran. Returns the problems found (none means the server is fit to measure).
 */
export async function verifyServer(
  port: number,
  spec: ServerSpec,
  comparison: Comparison,
): Promise<string[]> {
  const answer = await fetchOnce(port, comparison);
  const problems: string[] = [];
  if (answer.status !== comparison.expect.status) {
    problems.push(`status ${answer.status}, expected ${comparison.expect.status}`);
  }
  if (answer.body !== comparison.expect.body) {
    problems.push(
      `body ${JSON.stringify(answer.body)}, expected ${JSON.stringify(comparison.expect.body)}`,
    );
  }
  for (const [name, value] of Object.entries(spec.expectHeaders ?? {})) {
    const got = answer.headers[name];
    if (got !== value)
      problems.push(`header ${name}: ${JSON.stringify(got)}, expected ${JSON.stringify(value)}`);
  }
  return problems;
}
