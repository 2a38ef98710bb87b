// Property tests of problem details rendering (RFC 9457) through sendError().
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { HttpError, internalError } from '../../src/core/errors/errors.js';
import { PROBLEM_TYPE, sendError, toProblem } from '../../src/core/problem.js';
import { caseTally } from '../helpers/arbitraries.js';
import { fakeRequest, fakeResponse } from '../helpers/fake-http.js';
import { captureLogger } from '../helpers/logger.js';

const RUNS = { numRuns: 500 };
/** Stands for a secret held by a 5xx cause; generated text never contains it. */
const SECRET = 'hunter2-\u0001secret-cause';

const text = fc.oneof(fc.string({ unit: 'binary', maxLength: 30 }), fc.string({ maxLength: 30 }));
const extensions = fc.option(fc.dictionary(text, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 5 }), {
  nil: undefined,
});
const fieldErrors = fc.option(
  fc.array(fc.record({ field: text, message: text }), { maxLength: 3 }),
  {
    nil: undefined,
  },
);
const status = fc.integer({ min: 400, max: 599 });
const path = fc.string({ unit: 'grapheme-ascii', maxLength: 20 }).map((p) => `/${p}`);

function render(error: unknown, url = '/') {
  const req = fakeRequest({ url });
  const { res, body } = fakeResponse(req);
  const log = captureLogger();
  sendError(req, res, error, { logger: log });
  return { req, res, text: body(), logged: log.errors };
}

describe('problem details (property)', () => {
  it('any HttpError renders as JSON with the RFC 9457 members and its extensions', () => {
    const tally = caseTally();
    fc.assert(
      fc.property(
        status,
        fc.option(text, { nil: undefined }),
        fc.option(text, { nil: undefined }),
        extensions,
        fieldErrors,
        path,
        (s, detail, title, ext, errors, url) => {
          tally.case();
          const error = new HttpError(s, detail, { title, extensions: ext, errors });
          const { res, text: out, req } = render(error, url);
          tally.hit('checked');
          expect(res.statusCode).toBe(s);
          expect(res.getHeader('Content-Type')).toBe(PROBLEM_TYPE);
          const problem = JSON.parse(out!) as Record<string, unknown>;
          expect(problem).toMatchObject({
            type: 'about:blank',
            title: error.title,
            status: s,
            detail: error.detail,
            instance: url.split(/[?#]/)[0],
          });
          // exactly what toProblem() builds, through JSON
          expect(problem).toEqual(JSON.parse(JSON.stringify(toProblem(error, req))));
          for (const [k, v] of Object.entries(ext ?? {})) {
            if (!['type', 'title', 'status', 'detail', 'instance', 'errors'].includes(k)) {
              expect(problem[k]).toEqual(JSON.parse(JSON.stringify(v)));
            }
          }
          if (errors !== undefined) expect(problem.errors).toEqual(errors);
        },
      ),
      RUNS,
    );
    tally.expectShares({ checked: 1 });
  });

  it('never renders a 5xx cause, and hands it to the logger', () => {
    const thrown = fc
      .oneof(
        fc.record({
          kind: fc.constant('http' as const),
          status: fc.integer({ min: 500, max: 599 }),
          detail: fc.option(text, { nil: undefined }),
        }),
        fc.record({ kind: fc.constant('error' as const) }),
        fc.record({
          kind: fc.constant('foreign' as const),
          status: fc.integer({ min: 500, max: 599 }),
          expose: fc.constantFrom(undefined, false),
          statusCode: fc.boolean(),
        }),
        fc.record({ kind: fc.constant('value' as const), value: fc.anything() }),
      )
      // the secret must come from the cause alone (a filter, not fc.pre: no case is skipped)
      .filter((t) => !JSON.stringify(t).includes('secret-cause'));
    const tally = caseTally();
    fc.assert(
      fc.property(thrown, (t) => {
        tally.case();
        const cause = new Error(SECRET);
        let error: unknown;
        if (t.kind === 'http') error = internalError(t.detail, { cause });
        else if (t.kind === 'error') error = cause;
        else if (t.kind === 'foreign') {
          error = Object.assign(new Error(SECRET), {
            [t.statusCode ? 'statusCode' : 'status']: t.status,
            expose: t.expose,
          });
        } else error = { value: t.value, message: SECRET };
        const { res, text: out, logged } = render(error);
        tally.hit('checked');
        expect(res.statusCode).toBeGreaterThanOrEqual(500);
        expect(out).not.toContain('secret-cause');
        expect(out).not.toContain('hunter2');
        const problem = JSON.parse(out!) as Record<string, unknown>;
        expect(problem.status).toBe(res.statusCode);
        expect(typeof problem.title).toBe('string');
        expect(typeof problem.detail).toBe('string');
        expect(logged).toHaveLength(1);
      }),
      RUNS,
    );
    tally.expectShares({ checked: 1 });
  });

  it('any thrown value answers with a problem, never an exception from sendError', () => {
    const tally = caseTally();
    fc.assert(
      fc.property(fc.anything(), (value) => {
        tally.case();
        const { res, text: out } = render(value);
        tally.hit('checked');
        expect(res.statusCode).toBeGreaterThanOrEqual(400);
        expect(res.statusCode).toBeLessThanOrEqual(599);
        expect(JSON.parse(out!)).toMatchObject({ status: res.statusCode });
      }),
      RUNS,
    );
    tally.expectShares({ checked: 1 });
  });
});
