// toHttpError on the errors of frameworks' body parsers, built as body-parser (with raw-body
// and http-errors) and Fastify build them: the problem portico's readers give for each.
import { errorCodes } from 'fastify';
import { describe, expect, it } from 'vitest';
import { HttpError } from '../../../src/core/errors/errors.js';
import { fromFrameworkBodyError } from '../../../src/core/errors/framework.js';
import { toHttpError } from '../../../src/core/problem.js';

/** An error as http-errors makes it: a status, `expose` below 500, the given members. */
function httpError(status: number, message: string, members: Record<string, unknown> = {}) {
  return Object.assign(
    new Error(message),
    { status, statusCode: status, expose: status < 500 },
    members,
  );
}

/** What express.json() passes to `next` when JSON.parse fails on `body`. */
function parseFailure(body: string): SyntaxError {
  let error: SyntaxError | undefined;
  try {
    JSON.parse(body);
  } catch (err) {
    error = err as SyntaxError;
  }
  return Object.assign(error!, {
    status: 400,
    statusCode: 400,
    expose: true,
    body,
    type: 'entity.parse.failed',
  });
}

const INVALID_JSON = 'urn:portico:problem:invalid-json';

describe('toHttpError on body-parser errors', () => {
  it('locates invalid JSON in the text the error holds, quoting none of it', () => {
    const error = toHttpError(parseFailure('{"token":"secret",\n"b" 1}'));
    expect(error).toBeInstanceOf(HttpError);
    expect(error).toMatchObject({
      status: 400,
      type: INVALID_JSON,
      code: 'ERR_INVALID_JSON',
      detail: 'The request body is not valid JSON: syntax error at line 2, column 5 (position 23).',
    });
    expect(error.cause).toBeInstanceOf(SyntaxError);
  });

  it('names the one unexpected character where node gives no position', () => {
    const error = toHttpError(parseFailure('{"a":secret}'));
    expect(error.type).toBe(INVALID_JSON);
    expect(error.detail).toBe("The request body is not valid JSON: unexpected character 's'.");
  });

  it('takes JSON refused for its kind by the strict parser for what it is', () => {
    const strict = Object.assign(parseFailure('#'), { body: '"a string"' });
    expect(toHttpError(strict)).toMatchObject({
      type: INVALID_JSON,
      detail: 'The request body is not valid JSON here: send an object or an array.',
    });
  });

  it('leaves a parse failure that is not a SyntaxError (a form parser) to its status', () => {
    const error = toHttpError(httpError(400, 'bad form', { type: 'entity.parse.failed' }));
    expect(error).toMatchObject({ status: 400, type: 'about:blank', detail: 'bad form' });
    expect(fromFrameworkBodyError(httpError(400, 'x', { type: 'parameters.too.many' }))).toBe(
      undefined,
    );
  });

  it('answers a body over the limit with the limit it went over', () => {
    const error = toHttpError(
      httpError(413, 'request entity too large', {
        type: 'entity.too.large',
        limit: 102400,
        length: 200000,
      }),
    );
    expect(error).toMatchObject({
      status: 413,
      type: 'about:blank',
      code: 'ERR_BODY_TOO_LARGE',
      detail: 'The request body is larger than the limit of 102400 bytes.',
    });
  });

  it('maps a body cut off or of the wrong length', () => {
    expect(
      toHttpError(
        httpError(400, 'request size did not match content length', {
          type: 'request.size.invalid',
        }),
      ),
    ).toMatchObject({ status: 400, code: 'ERR_BODY_LENGTH' });
    expect(
      toHttpError(httpError(400, 'request aborted', { type: 'request.aborted' })),
    ).toMatchObject({
      status: 400,
      code: 'ERR_BODY_ABORTED',
      detail: 'The request body was cut off before its end.',
    });
  });

  it('maps a refused charset, quoting it only when it is a plain token', () => {
    const named = toHttpError(
      httpError(415, 'unsupported charset "LATIN1"', {
        type: 'charset.unsupported',
        charset: 'latin1',
      }),
    );
    expect(named).toMatchObject({
      status: 415,
      code: 'ERR_UNSUPPORTED_CHARSET',
      detail: 'The charset latin1 is not supported; send UTF-8.',
    });
    const odd = toHttpError(
      httpError(415, 'unsupported charset', {
        type: 'charset.unsupported',
        charset: 'a b<script>',
      }),
    );
    expect(odd.detail).toBe('The charset is not supported; send UTF-8.');
  });

  it('maps a refused content coding, with Accept-Encoding: identity', () => {
    const error = toHttpError(
      httpError(415, 'unsupported content encoding "x"', {
        type: 'encoding.unsupported',
        encoding: 'x',
      }),
    );
    expect(error).toMatchObject({ status: 415, code: 'ERR_UNSUPPORTED_CONTENT_ENCODING' });
    expect(error.headers).toEqual({ 'Accept-Encoding': 'identity' });
  });

  it('needs an error status: a bare `type` member is not enough', () => {
    expect(fromFrameworkBodyError({ type: 'entity.too.large' })).toBe(undefined);
    expect(fromFrameworkBodyError(null)).toBe(undefined);
    expect(fromFrameworkBodyError('entity.too.large')).toBe(undefined);
    expect(toHttpError({ type: 'entity.too.large' }).status).toBe(500);
  });
});

describe("toHttpError on Fastify's content-type parser errors", () => {
  it('answers invalid and empty JSON with the invalid-json problem', () => {
    expect(toHttpError(new errorCodes.FST_ERR_CTP_INVALID_JSON_BODY())).toMatchObject({
      status: 400,
      type: INVALID_JSON,
      detail: 'The request body is not valid JSON.',
    });
    expect(toHttpError(new errorCodes.FST_ERR_CTP_EMPTY_JSON_BODY())).toMatchObject({
      status: 400,
      type: INVALID_JSON,
      detail: 'The request body is not valid JSON: it ends too early.',
    });
  });

  it('answers a body too large, of the wrong length, or of a type without a parser', () => {
    expect(toHttpError(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE())).toMatchObject({
      status: 413,
      code: 'ERR_BODY_TOO_LARGE',
      detail: 'The request body is larger than the limit.',
    });
    expect(toHttpError(new errorCodes.FST_ERR_CTP_INVALID_CONTENT_LENGTH())).toMatchObject({
      status: 400,
      code: 'ERR_BODY_LENGTH',
    });
    expect(toHttpError(new errorCodes.FST_ERR_CTP_INVALID_MEDIA_TYPE())).toMatchObject({
      status: 415,
      type: 'about:blank',
      code: 'ERR_UNSUPPORTED_MEDIA_TYPE',
      detail: 'The Content-Type of the request body is not accepted here.',
    });
  });

  it("leaves Fastify's other errors to their status", () => {
    const validation = Object.assign(new Error('body must have required property text'), {
      statusCode: 400,
      code: 'FST_ERR_VALIDATION',
    });
    expect(toHttpError(validation)).toMatchObject({
      status: 400,
      type: 'about:blank',
      detail: 'body must have required property text',
    });
  });

  it("takes Fastify 4's SyntaxError with a 400 for invalid JSON, located where node says", () => {
    const v8 = Object.assign(new SyntaxError('Unexpected token } in JSON at position 7'), {
      statusCode: 400,
    });
    expect(toHttpError(v8)).toMatchObject({
      type: INVALID_JSON,
      detail: 'The request body is not valid JSON: syntax error at position 7.',
    });
    const node22 = Object.assign(
      new SyntaxError(
        'Expected double-quoted property name in JSON at position 7 (line 1 column 8)',
      ),
      { statusCode: 400 },
    );
    expect(toHttpError(node22).detail).toBe(
      'The request body is not valid JSON: syntax error at line 1, column 8 (position 7).',
    );
    // a SyntaxError that is not about JSON stays what its status says
    const other = Object.assign(new SyntaxError('bad regex'), { statusCode: 400 });
    expect(toHttpError(other).type).toBe('about:blank');
  });
});
