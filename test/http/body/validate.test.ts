// Request validation with Standard Schema (zod and valibot), over a real server.
import type { IncomingMessage } from 'node:http';
import * as v from 'valibot';
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { sendJson } from '../../../src/core/send.js';
import { readJson } from '../../../src/http/body/body.js';
import type { StandardSchemaV1 } from '../../../src/http/body/standard-schema.js';
import { validate } from '../../../src/http/body/validate.js';
import { createRouter } from '../../../src/http/routing/router.js';
import { closeAll, expectProblem, json, request, serve } from '../../helpers/http.js';

const ZodOrder = z.object({
  customer: z.object({ name: z.string().trim().min(1) }),
  items: z.array(z.object({ sku: z.string(), quantity: z.number().int().positive() })).min(1),
});

const ValibotOrder = v.object({
  customer: v.object({ name: v.pipe(v.string(), v.trim(), v.minLength(1)) }),
  items: v.pipe(
    v.array(
      v.object({ sku: v.string(), quantity: v.pipe(v.number(), v.integer(), v.minValue(1)) }),
    ),
    v.minLength(1),
  ),
});

type Order = { customer: { name: string }; items: { sku: string; quantity: number }[] };

const isTaken = async (name: string) => {
  await new Promise((resolve) => setTimeout(resolve, 5));
  return name === 'taken';
};

const ZodSignup = z.object({
  name: z.string().refine(async (name) => !(await isTaken(name)), 'is taken'),
});

const ValibotSignup = v.objectAsync({
  name: v.pipeAsync(
    v.string(),
    v.checkAsync(async (name) => !(await isTaken(name)), 'is taken'),
  ),
});

/** Calls `read` and reports whether it threw at once, and whether the body was left unread. */
function refusal(req: IncomingMessage, read: () => unknown) {
  try {
    read();
    return { threw: false };
  } catch (err) {
    const error = err as TypeError & { code?: string };
    return {
      threw: true,
      typeError: error instanceof TypeError,
      code: error.code,
      message: error.message,
      unread: !req.readableDidRead,
    };
  }
}

let port: number;

beforeAll(async () => {
  ({ port } = await serve(
    createRouter({
      '/zod': {
        POST: async (req, res) => {
          const order = await readJson(req, { schema: ZodOrder });
          expectTypeOf(order).toEqualTypeOf<Order>();
          sendJson(res, 201, { order, name: order.customer.name });
        },
      },
      '/valibot': {
        POST: async (req, res) => {
          const order = await readJson(req, { schema: ValibotOrder });
          expectTypeOf(order).toEqualTypeOf<Order>();
          sendJson(res, 201, { order, name: order.customer.name });
        },
      },
      '/zod-async': {
        POST: async (req, res) => sendJson(res, 201, await readJson(req, { schema: ZodSignup })),
      },
      '/valibot-async': {
        POST: async (req, res) =>
          sendJson(res, 201, await readJson(req, { schema: ValibotSignup })),
      },
      '/zod-list': {
        POST: async (req, res) =>
          sendJson(res, 201, await readJson(req, { schema: z.array(z.string()), limit: 64 })),
      },
      '/odd-keys': {
        POST: async (req, res) =>
          sendJson(
            res,
            201,
            await readJson(req, { schema: z.object({ 'a/b': z.string(), 'c~d': z.string() }) }),
          ),
      },
      '/validate': {
        POST: async (req, res) => {
          const body = await readJson(req);
          const order = await validate(ValibotOrder, body);
          expectTypeOf(order).toEqualTypeOf<Order>();
          sendJson(res, 201, order);
        },
      },
      '/not-a-schema': {
        POST: (req, res) => {
          const notSchemas: unknown[] = [
            {},
            null,
            42,
            z.object({}).parse,
            { '~standard': { version: 2, validate: () => ({ value: 1 }) } },
            { '~standard': { version: 1 } },
          ];
          sendJson(res, 200, {
            readJson: notSchemas.map((schema) =>
              refusal(req, () => readJson(req, { schema: schema as StandardSchemaV1 })),
            ),
            validate: refusal(req, () => validate({} as StandardSchemaV1, {})),
          });
        },
      },
    }),
  ));
});

afterAll(closeAll);

const post = (path: string, body: unknown, headers = { 'Content-Type': 'application/json' }) =>
  request(port, path, {
    method: 'POST',
    headers,
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

const order = {
  customer: { name: '  Ada  ' },
  items: [{ sku: 'tea', quantity: 2 }],
};

const badOrder = {
  customer: { name: '   ' },
  items: [
    { sku: 'tea', quantity: 2 },
    { sku: 7, quantity: 0 },
  ],
};

describe.each([
  ['zod', '/zod'],
  ['valibot', '/valibot'],
])('readJson(req, { schema }) with %s', (_vendor, path) => {
  it('resolves to the schema’s output (transforms applied)', async () => {
    const reply = await post(path, order);
    expect(reply.status, reply.body).toBe(201);
    expect(json(reply)).toEqual({ order: { ...order, customer: { name: 'Ada' } }, name: 'Ada' });
  });

  it('answers 422 naming every field at fault by JSON Pointer', async () => {
    const problem = expectProblem(await post(path, badOrder), 422, 'validation');
    expect(problem.title).toBe('Validation failed');
    const errors = problem.errors as { field: string; message: string }[];
    expect(errors.map((e) => e.field).sort()).toEqual([
      '/customer/name',
      '/items/1/quantity',
      '/items/1/sku',
    ]);
    for (const error of errors) expect(error.message).toEqual(expect.any(String));
    expect(errors.every((e) => e.message.length > 0)).toBe(true);
  });

  it('names a missing member and a wrong root', async () => {
    const missing = expectProblem(await post(path, { items: [] }), 422, 'validation');
    const fields = (missing.errors as { field: string }[]).map((e) => e.field);
    expect(fields).toContain('/customer');
    const root = expectProblem(await post(path, '"an order"'), 422, 'validation');
    expect(root.errors).toEqual([{ field: '', message: expect.any(String) }]);
  });

  it('keeps the reader’s own answers: 400 for invalid JSON, 415 for another type', async () => {
    expectProblem(await post(path, '{"customer":'), 400, 'invalid-json');
    expect((await post(path, order, { 'Content-Type': 'text/plain' })).status).toBe(415);
  });
});

describe.each([
  ['zod', '/zod-async'],
  ['valibot', '/valibot-async'],
])('an async schema with %s', (_vendor, path) => {
  it('passes a valid body and refuses an invalid one', async () => {
    const ok = await post(path, { name: 'free' });
    expect(ok.status, ok.body).toBe(201);
    expect(json(ok)).toEqual({ name: 'free' });
    const refused = expectProblem(await post(path, { name: 'taken' }), 422, 'validation');
    expect(refused.errors).toEqual([{ field: '/name', message: 'is taken' }]);
  });
});

describe('field pointers', () => {
  it('escape `~` and `/` as RFC 6901 asks', async () => {
    const problem = expectProblem(await post('/odd-keys', {}), 422, 'validation');
    expect((problem.errors as { field: string }[]).map((e) => e.field).sort()).toEqual([
      '/a~1b',
      '/c~0d',
    ]);
  });

  it('index arrays at the root', async () => {
    const problem = expectProblem(await post('/zod-list', ['a', 2, 'c', 4]), 422, 'validation');
    expect((problem.errors as { field: string }[]).map((e) => e.field)).toEqual(['/1', '/3']);
  });

  it('leave other options in force alongside `schema`', async () => {
    expectProblem(await post('/zod-list', Array(20).fill('abcdef')), 413);
  });
});

describe('validate(schema, value)', () => {
  it('resolves to the typed output, or rejects with a 422 problem', async () => {
    const ok = await post('/validate', order);
    expect(ok.status, ok.body).toBe(201);
    expect(json(ok)).toEqual({ ...order, customer: { name: 'Ada' } });
    const problem = expectProblem(await post('/validate', badOrder), 422, 'validation');
    expect((problem.errors as unknown[]).length).toBe(3);
  });

  it('takes an issue path of `{ key }` segments and symbols', async () => {
    const schema: StandardSchemaV1<unknown, never> = {
      '~standard': {
        version: 1,
        vendor: 'hand-made',
        validate: () => ({
          issues: [
            { message: 'a', path: [{ key: 'list' }, { key: 0 }, 'name'] },
            { message: 'b', path: [Symbol('tag')] },
            { message: 'c', path: [] },
            { message: 'd' },
          ],
        }),
      },
    };
    await expect(validate(schema, {})).rejects.toMatchObject({
      status: 422,
      errors: [
        { field: '/list/0/name', message: 'a' },
        { field: '/tag', message: 'b' },
        { field: '', message: 'c' },
        { field: '', message: 'd' },
      ],
    });
  });
});

describe('a schema that is a function (as arktype’s are)', () => {
  it('is taken as a Standard Schema', async () => {
    const schema = Object.assign((value: unknown) => value, {
      '~standard': {
        version: 1 as const,
        vendor: 'callable',
        validate: (value: unknown) =>
          typeof value === 'string' ? { value: value.length } : { issues: [{ message: 'no' }] },
      },
    });
    expectTypeOf(await validate(schema, 'four')).toEqualTypeOf<unknown>();
    expect(await validate(schema, 'four')).toBe(4);
    await expect(validate(schema, 4)).rejects.toMatchObject({ status: 422 });
  });
});

describe('a `schema` that is not a Standard Schema', () => {
  it('throws a TypeError at call time, before the body is read', async () => {
    const reply = await post('/not-a-schema', order);
    expect(reply.status, reply.body).toBe(200);
    const { readJson: refusals, validate: refused } = json<{
      readJson: Record<string, unknown>[];
      validate: Record<string, unknown>;
    }>(reply);
    expect(refusals).toHaveLength(6);
    for (const r of [...refusals, refused]) {
      expect(r).toMatchObject({ threw: true, typeError: true, code: 'ERR_INVALID_OPTION' });
      expect(r.unread).toBe(true);
      expect(r.message).toMatch(/`schema` must be a Standard Schema/);
    }
    expect(refusals[0]!.message).toMatch(/^readJson\(\):/);
    expect(refused.message).toMatch(/^validate\(\):/);
  });
});
