import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterAll, describe, expect, expectTypeOf, it } from 'vitest';
import { toNodeListener } from '../../src/adapters/node.js';
import { compose, type Middleware } from '../../src/core/compose.js';
import {
  type ContextKey,
  createContextKey,
  getContextValue,
  setContextValue,
} from '../../src/core/context.js';
import { conflict } from '../../src/core/errors/errors.js';
import { PROBLEM_TYPE } from '../../src/core/problem.js';
import { silentLogger } from '../../src/diagnostics/index.js';
import { closeAll, listen, request } from '../helpers/http.js';

afterAll(closeAll);

const fakeReq = () => ({ url: '/', headers: {} }) as IncomingMessage;
const fakeRes = () => ({}) as ServerResponse;
const silent = { logger: silentLogger };

describe('compose', () => {
  it('runs middleware in order, unwinding in reverse', async () => {
    const trace: string[] = [];
    const step =
      (name: string): Middleware =>
      async (_req, _res, next) => {
        trace.push(`${name} in`);
        await next();
        trace.push(`${name} out`);
      };
    await compose([step('a'), step('b'), step('c')])(fakeReq(), fakeRes(), async () => {
      trace.push('end');
    });
    expect(trace).toEqual(['a in', 'b in', 'c in', 'end', 'c out', 'b out', 'a out']);
  });

  it('resolves an awaited next() only after the downstream work finished', async () => {
    const trace: string[] = [];
    const app = compose([
      async (_req, _res, next) => {
        await next();
        trace.push('after next');
      },
      async (_req, _res, next) => {
        await new Promise((resolve) => setTimeout(resolve, 10));
        trace.push('slow downstream done');
        await next();
      },
      async () => {
        await new Promise((resolve) => setImmediate(resolve));
        trace.push('last done');
      },
    ]);
    await app(fakeReq(), fakeRes(), async () => {});
    expect(trace).toEqual(['slow downstream done', 'last done', 'after next']);
  });

  it('calls the outer next after the last middleware', async () => {
    let reached = false;
    await compose([(_req, _res, next) => next(), (_req, _res, next) => next()])(
      fakeReq(),
      fakeRes(),
      async () => {
        reached = true;
      },
    );
    expect(reached).toBe(true);
  });

  it('stops when a middleware does not call next', async () => {
    let reached = false;
    await compose([
      () => {},
      () => {
        reached = true;
      },
    ])(fakeReq(), fakeRes(), async () => {
      reached = true;
    });
    expect(reached).toBe(false);
  });

  it('runs an empty chain straight to next', async () => {
    let reached = 0;
    await compose([])(fakeReq(), fakeRes(), async () => {
      reached++;
    });
    expect(reached).toBe(1);
  });

  it('works without an outer next', async () => {
    let ran = false;
    const chain = compose([
      (_req, _res, next) => next(),
      () => {
        ran = true;
      },
    ]);
    await (chain as (req: IncomingMessage, res: ServerResponse) => Promise<void>)(
      fakeReq(),
      fakeRes(),
    );
    expect(ran).toBe(true);
  });

  it('rejects when next() is called twice', async () => {
    let second: unknown;
    await compose([
      async (_req, _res, next) => {
        await next();
        second = await next().then(
          () => 'resolved',
          (err: unknown) => err,
        );
      },
      () => {},
    ])(fakeReq(), fakeRes(), async () => {});
    expect(second).toBeInstanceOf(Error);
    expect((second as Error).message).toMatch(/next\(\) called more than once/);
  });

  it('turns a synchronous throw into a rejection', async () => {
    const error = new Error('sync');
    const chain = compose([
      (_req, _res, next) => next(),
      () => {
        throw error;
      },
    ]);
    await expect(chain(fakeReq(), fakeRes(), async () => {})).rejects.toBe(error);
  });

  it('passes an async rejection up to the caller', async () => {
    const error = new Error('async');
    const chain = compose([
      (_req, _res, next) => next(),
      async () => {
        await Promise.resolve();
        throw error;
      },
    ]);
    await expect(chain(fakeReq(), fakeRes(), async () => {})).rejects.toBe(error);
  });

  it('lets an upstream middleware catch a downstream error', async () => {
    let caught: unknown;
    await compose([
      async (_req, _res, next) => {
        try {
          await next();
        } catch (err) {
          caught = err;
        }
      },
      () => {
        throw conflict('dup');
      },
    ])(fakeReq(), fakeRes(), async () => {});
    expect(caught).toMatchObject({ status: 409 });
  });

  it('refuses anything but functions', () => {
    expect(() => compose([(() => {}) as Middleware, 'nope' as unknown as Middleware])).toThrow(
      TypeError,
    );
    expect(() => compose([null as unknown as Middleware])).toThrow(TypeError);
  });

  it('nests: a composed chain is a middleware', async () => {
    const trace: string[] = [];
    const inner = compose([
      (_req, _res, next) => {
        trace.push('inner1');
        return next();
      },
      (_req, _res, next) => {
        trace.push('inner2');
        return next();
      },
    ]);
    await compose([inner, () => void trace.push('outer2')])(fakeReq(), fakeRes(), async () => {});
    expect(trace).toEqual(['inner1', 'inner2', 'outer2']);
  });
});

describe('compose through toNodeListener', () => {
  it('answers a synchronous throw with a problem', async () => {
    const { port } = await listen(
      toNodeListener(
        [
          (_req, _res, next) => next(),
          () => {
            throw conflict('sync conflict');
          },
        ],
        silent,
      ),
    );
    const answer = await request(port, '/x');
    expect(answer.status).toBe(409);
    expect(answer.headers['content-type']).toBe(PROBLEM_TYPE);
    expect(JSON.parse(answer.body)).toMatchObject({ status: 409, detail: 'sync conflict' });
  });

  it('answers an async rejection with a problem', async () => {
    const { port } = await listen(
      toNodeListener(
        [
          async (_req, _res, next) => {
            await next();
          },
          async () => {
            await new Promise((resolve) => setImmediate(resolve));
            throw new Error('async secret');
          },
        ],
        silent,
      ),
    );
    const answer = await request(port, '/x');
    expect(answer.status).toBe(500);
    expect(answer.headers['content-type']).toBe(PROBLEM_TYPE);
    expect(answer.body).not.toContain('async secret');
  });

  it('answers a throw from a single middleware (not an array)', async () => {
    const { port } = await listen(
      toNodeListener(() => {
        throw conflict('single');
      }, silent),
    );
    const answer = await request(port, '/x');
    expect(answer.status).toBe(409);
  });

  it('answers an unanswered request with a 404 problem', async () => {
    const { port } = await listen(toNodeListener([(_req, _res, next) => next()], silent));
    const answer = await request(port, '/unknown?q=1');
    expect(answer.status).toBe(404);
    expect(answer.headers['content-type']).toBe(PROBLEM_TYPE);
    expect(JSON.parse(answer.body)).toMatchObject({
      type: 'about:blank',
      title: 'Not Found',
      status: 404,
      instance: '/unknown',
    });
  });

  it('answers 404 for an empty chain', async () => {
    const { port } = await listen(toNodeListener([], silent));
    const answer = await request(port, '/');
    expect(answer.status).toBe(404);
  });

  it('does not add a 404 after a middleware that answered and then called next', async () => {
    const { port } = await listen(
      toNodeListener(
        [
          (_req, res, next) => {
            res.end('answered');
            return next();
          },
        ],
        silent,
      ),
    );
    const answer = await request(port, '/');
    expect(answer.status).toBe(200);
    expect(answer.body).toBe('answered');
  });
});

describe('context values', () => {
  it('are typed by their key', () => {
    const count = createContextKey<number>('count');
    expectTypeOf(count).toEqualTypeOf<ContextKey<number>>();
    const req = fakeReq();
    setContextValue(req, count, 3);
    const value = getContextValue(req, count);
    expectTypeOf(value).toEqualTypeOf<number | undefined>();
    expect(value).toBe(3);
    // @ts-expect-error a string does not fit a number slot
    setContextValue(req, count, 'three');
  });

  it('are undefined until set, and keys with the same name do not collide', () => {
    const a = createContextKey<string>('same');
    const b = createContextKey<string>('same');
    const req = fakeReq();
    expect(getContextValue(req, a)).toBeUndefined();
    setContextValue(req, a, 'A');
    expect(getContextValue(req, a)).toBe('A');
    expect(getContextValue(req, b)).toBeUndefined();
    setContextValue(req, a, 'A2');
    expect(getContextValue(req, a)).toBe('A2');
  });

  it('are not enumerable on the request', () => {
    const key = createContextKey<string>('hidden');
    const req = fakeReq();
    setContextValue(req, key, 'x');
    expect(Object.keys(req)).toEqual(['url', 'headers']);
    expect(JSON.stringify(req)).not.toContain('"x"');
  });

  it('are per request over a real server', async () => {
    const user = createContextKey<{ name: string }>('user');
    const seen: Array<string | undefined> = [];
    const { port } = await listen(
      toNodeListener(
        [
          (req, _res, next) => {
            // what an earlier request stored must not be visible here
            seen.push(getContextValue(req, user)?.name);
            const name = new URL(req.url ?? '/', 'http://x').searchParams.get('name') ?? 'anon';
            setContextValue(req, user, { name });
            return next();
          },
          async (req, res) => {
            await new Promise((resolve) => setTimeout(resolve, 5));
            res.end(getContextValue(req, user)?.name ?? 'none');
          },
        ],
        silent,
      ),
    );
    const answers = await Promise.all(
      ['alice', 'bob', 'carol'].map((name) => request(port, `/?name=${name}`)),
    );
    expect(answers.map((a) => a.body)).toEqual(['alice', 'bob', 'carol']);
    expect(seen).toEqual([undefined, undefined, undefined]);
  });
});
