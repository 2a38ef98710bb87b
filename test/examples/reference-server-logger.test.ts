// The reference server's logger (examples/reference-server/logging.ts): the fields that could
// only be secrets removed from every line, and the asynchronous stdout that batches its
// writes yet loses nothing when the process exits.
import { spawn } from 'node:child_process';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, scrubLogFields } from '../../examples/reference-server/logging.js';

/** A destination keeping the lines written to it. */
function lines(): { stream: Writable; parsed(): Record<string, unknown>[] } {
  let text = '';
  const stream = new Writable({
    write(chunk, _encoding, done) {
      text += String(chunk);
      done();
    },
  });
  const parsed = () =>
    text
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  return { stream, parsed };
}

describe('scrubLogFields', () => {
  it('removes secret fields at the top and one level down, and what a req or res never logs', () => {
    const fields = {
      password: 'p1',
      Token: 't1',
      client: { id: 'c', client_secret: 's1', Authorization: 'a1' },
      req: { id: 'r', url: '/x', headers: { cookie: 'c1' }, query: { api_key: 'k' }, body: 'b' },
      res: { statusCode: 200, headers: { 'set-cookie': 'c2' } },
      kept: { note: 'fine' },
      list: ['token'],
    };
    expect(scrubLogFields(fields)).toEqual({
      client: { id: 'c' },
      req: { id: 'r', url: '/x' },
      res: { statusCode: 200 },
      kept: { note: 'fine' },
      list: ['token'],
    });
    // the caller's object is left as it was
    expect(fields.client.client_secret).toBe('s1');
    expect(fields.req.headers.cookie).toBe('c1');
  });

  it('returns the very object when it holds nothing to remove', () => {
    const fields = { req: { id: 'r', method: 'GET', url: '/' }, res: { statusCode: 200 }, n: 1 };
    const scrubbed = scrubLogFields(fields);
    expect(scrubbed).toBe(fields);
    expect(scrubbed.req).toBe(fields.req);
  });

  it('serialises an error carrying a secret without it (message and stack kept)', () => {
    const err = Object.assign(new Error('refused'), { token: 'leaked', code: 'E_X' });
    const scrubbed = scrubLogFields({ err }) as { err: Record<string, unknown> };
    expect(scrubbed.err.token).toBeUndefined();
    expect(scrubbed.err.message).toBe('refused');
    expect(scrubbed.err.code).toBe('E_X');
    expect(String(scrubbed.err.stack)).toContain('refused');
    expect(scrubLogFields({ err: new Error('plain') }).err).toBeInstanceOf(Error);
  });
});

describe('createLogger', () => {
  it('writes pino lines without the secret fields', () => {
    const out = lines();
    const logger = createLogger('info', out.stream);
    logger.info({ client: { id: 'c', secret: 'hidden' }, authorization: 'Bearer x' }, 'hello');
    logger.debug({ n: 1 }, 'below the level');
    const [line, ...rest] = out.parsed();
    expect(rest).toEqual([]);
    expect(line).toMatchObject({ level: 30, msg: 'hello', client: { id: 'c' } });
    expect(JSON.stringify(line)).not.toMatch(/hidden|Bearer/);
  });

  it('loses no buffered line when the process exits (stdout a pipe)', async () => {
    const count = 2000;
    const script =
      "const { createLogger } = await import('./examples/reference-server/logging.ts');" +
      "const logger = createLogger('info');" +
      `for (let i = 0; i < ${count}; i++) logger.info({ i }, 'line');` +
      'process.exit(0);';
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', script],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let text = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      text += chunk;
    });
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    expect(code).toBe(0);
    const numbers = text
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => (JSON.parse(line) as { i: number }).i);
    expect(numbers).toEqual(Array.from({ length: count }, (_, i) => i));
  }, 30_000);
});
