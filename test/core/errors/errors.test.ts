import { describe, expect, it } from 'vitest';
import {
  badGateway,
  badRequest,
  conflict,
  contentTooLarge,
  forbidden,
  gatewayTimeout,
  gone,
  HttpError,
  internalError,
  methodNotAllowed,
  notAcceptable,
  notFound,
  notImplemented,
  PorticoError,
  PROBLEM_TYPE_BASE,
  preconditionFailed,
  preconditionRequired,
  serviceUnavailable,
  tooManyRequests,
  unauthorized,
  unprocessable,
  unsupportedMediaType,
} from '../../../src/core/errors/errors.js';

describe('status helpers', () => {
  const cases: ReadonlyArray<[string, () => HttpError, number, string, string]> = [
    ['badRequest', () => badRequest(), 400, 'Bad Request', 'ERR_BAD_REQUEST'],
    ['unauthorized', () => unauthorized(), 401, 'Unauthorized', 'ERR_UNAUTHORIZED'],
    ['forbidden', () => forbidden(), 403, 'Forbidden', 'ERR_FORBIDDEN'],
    ['notFound', () => notFound(), 404, 'Not Found', 'ERR_NOT_FOUND'],
    [
      'methodNotAllowed',
      () => methodNotAllowed(['GET']),
      405,
      'Method Not Allowed',
      'ERR_METHOD_NOT_ALLOWED',
    ],
    ['notAcceptable', () => notAcceptable(), 406, 'Not Acceptable', 'ERR_NOT_ACCEPTABLE'],
    ['conflict', () => conflict(), 409, 'Conflict', 'ERR_CONFLICT'],
    ['gone', () => gone(), 410, 'Gone', 'ERR_GONE'],
    [
      'preconditionFailed',
      () => preconditionFailed(),
      412,
      'Precondition Failed',
      'ERR_PRECONDITION_FAILED',
    ],
    // node 20 still calls 413 "Payload Too Large" (RFC 9110 renamed it "Content Too Large")
    ['contentTooLarge', () => contentTooLarge(), 413, 'Too Large', 'ERR_BODY_TOO_LARGE'],
    [
      'unsupportedMediaType',
      () => unsupportedMediaType(),
      415,
      'Unsupported Media Type',
      'ERR_UNSUPPORTED_MEDIA_TYPE',
    ],
    ['unprocessable', () => unprocessable([]), 422, 'Validation failed', 'ERR_VALIDATION'],
    [
      'preconditionRequired',
      () => preconditionRequired(),
      428,
      'Precondition Required',
      'ERR_PRECONDITION_REQUIRED',
    ],
    ['tooManyRequests', () => tooManyRequests(1), 429, 'Too Many Requests', 'ERR_RATE_LIMITED'],
    ['internalError', () => internalError(), 500, 'Internal Server Error', 'ERR_INTERNAL'],
    ['notImplemented', () => notImplemented(), 501, 'Not Implemented', 'ERR_NOT_IMPLEMENTED'],
    ['badGateway', () => badGateway(), 502, 'Bad Gateway', 'ERR_BAD_GATEWAY'],
    [
      'serviceUnavailable',
      () => serviceUnavailable(),
      503,
      'Service Unavailable',
      'ERR_UNAVAILABLE',
    ],
    ['gatewayTimeout', () => gatewayTimeout(), 504, 'Gateway Timeout', 'ERR_GATEWAY_TIMEOUT'],
  ];

  for (const [name, make, status, title, code] of cases) {
    it(`${name}() is a ${status} HttpError with code ${code}`, () => {
      const error = make();
      expect(error).toBeInstanceOf(HttpError);
      expect(error).toBeInstanceOf(PorticoError);
      expect(error).toBeInstanceOf(Error);
      expect(error.name).toBe('HttpError');
      expect(error.status).toBe(status);
      expect(error.title).toContain(title);
      expect(error.code).toBe(code);
      expect(typeof error.detail).toBe('string');
      expect(error.detail.length).toBeGreaterThan(0);
      expect(error.expose).toBe(status < 500);
      if (name !== 'unprocessable') expect(error.type).toBe('about:blank');
    });
  }

  it('uses the given detail as detail and message', () => {
    const error = conflict('A message with this id already exists.');
    expect(error.detail).toBe('A message with this id already exists.');
    expect(error.message).toBe('A message with this id already exists.');
  });

  it('falls back to the title as detail when none is given', () => {
    const error = notFound();
    expect(error.detail).toBe('Not Found');
    expect(error.message).toBe('Not Found');
  });

  it('takes a type slug, a full type URI, a custom code, title, extensions and a cause', () => {
    const cause = new Error('root cause');
    const slugged = badRequest('x', { typeSlug: 'invalid-json' });
    expect(slugged.type).toBe(`${PROBLEM_TYPE_BASE}invalid-json`);
    expect(slugged.type).toBe('urn:portico:problem:invalid-json');

    const full = badRequest('x', {
      typeSlug: 'ignored',
      type: 'https://errors.example.test/bad',
      code: 'ERR_CUSTOM',
      title: 'Custom title',
      extensions: { balance: 30 },
      cause,
    });
    expect(full.type).toBe('https://errors.example.test/bad');
    expect(full.code).toBe('ERR_CUSTOM');
    expect(full.title).toBe('Custom title');
    expect(full.extensions).toEqual({ balance: 30 });
    expect(full.cause).toBe(cause);
  });

  it('carries no headers unless its status demands them', () => {
    expect(badRequest().headers).toEqual({});
    expect(notFound().headers).toEqual({});
    expect(internalError().headers).toEqual({});
  });

  it('keeps extra headers passed by the caller', () => {
    expect(forbidden(undefined, { headers: { 'X-Reason': 'scope' } }).headers).toEqual({
      'X-Reason': 'scope',
    });
  });
});

describe('401 unauthorized', () => {
  it('sets WWW-Authenticate from challenge', () => {
    const error = unauthorized('The access token expired.', {
      challenge: 'Bearer error="invalid_token"',
    });
    expect(error.status).toBe(401);
    expect(error.detail).toBe('The access token expired.');
    expect(error.headers['WWW-Authenticate']).toBe('Bearer error="invalid_token"');
  });

  it('merges the challenge with other headers', () => {
    const error = unauthorized(undefined, {
      challenge: 'Basic realm="api"',
      headers: { 'X-Other': '1' },
    });
    expect(error.headers).toEqual({ 'X-Other': '1', 'WWW-Authenticate': 'Basic realm="api"' });
  });

  it('sets no WWW-Authenticate without a challenge', () => {
    expect(unauthorized().headers['WWW-Authenticate']).toBeUndefined();
  });
});

describe('405 methodNotAllowed', () => {
  it('lists the allowed methods in Allow', () => {
    const error = methodNotAllowed(['GET', 'HEAD', 'OPTIONS']);
    expect(error.headers.Allow).toBe('GET, HEAD, OPTIONS');
  });

  it('keeps other headers next to Allow', () => {
    const error = methodNotAllowed(['POST'], 'use POST', { headers: { 'X-Hint': 'y' } });
    expect(error.headers).toEqual({ 'X-Hint': 'y', Allow: 'POST' });
    expect(error.detail).toBe('use POST');
  });
});

describe('Retry-After', () => {
  it('429 carries Retry-After in whole seconds', () => {
    expect(tooManyRequests(30).headers['Retry-After']).toBe('30');
  });

  it('429 rounds fractional seconds up', () => {
    expect(tooManyRequests(1.2).headers['Retry-After']).toBe('2');
    expect(tooManyRequests(0.001).headers['Retry-After']).toBe('1');
  });

  it('429 never sends a negative Retry-After', () => {
    expect(tooManyRequests(-5).headers['Retry-After']).toBe('0');
    expect(tooManyRequests(-0.5).headers['Retry-After']).toBe('0');
  });

  it('503 carries Retry-After only when given', () => {
    expect(serviceUnavailable().headers['Retry-After']).toBeUndefined();
    expect(serviceUnavailable(120).headers['Retry-After']).toBe('120');
    expect(serviceUnavailable(2.01).headers['Retry-After']).toBe('3');
    expect(serviceUnavailable(-1).headers['Retry-After']).toBe('0');
  });

  it('keeps other headers next to Retry-After', () => {
    const error = tooManyRequests(5, 'slow down', { headers: { 'X-RateLimit-Remaining': '0' } });
    expect(error.headers).toEqual({ 'X-RateLimit-Remaining': '0', 'Retry-After': '5' });
    expect(error.detail).toBe('slow down');
  });

  it('never produces a non-numeric Retry-After (NaN, Infinity)', () => {
    for (const value of [Number.NaN, Number.POSITIVE_INFINITY]) {
      let header: string | readonly string[] | undefined;
      try {
        header = tooManyRequests(value).headers['Retry-After'];
      } catch (err) {
        expect(err).toBeInstanceOf(TypeError);
        continue;
      }
      expect(header).toMatch(/^\d+$/);
    }
  });
});

describe('422 unprocessable', () => {
  it('carries the field errors and a validation type', () => {
    const errors = [
      { field: '/text', message: 'must be 1–1000 characters' },
      { field: 'channel', message: 'is required' },
    ];
    const error = unprocessable(errors);
    expect(error.status).toBe(422);
    expect(error.errors).toEqual(errors);
    expect(error.type).toBe(`${PROBLEM_TYPE_BASE}validation`);
    expect(error.title).toBe('Validation failed');
    expect(error.detail).toBe('The request failed validation.');
    expect(error.code).toBe('ERR_VALIDATION');
  });

  it('takes a custom detail', () => {
    expect(unprocessable([], 'Nope.').detail).toBe('Nope.');
  });
});

describe('HttpError', () => {
  it('builds from a status alone', () => {
    const error = new HttpError(418);
    expect(error.status).toBe(418);
    expect(error.code).toBe('ERR_HTTP_418');
    expect(error.type).toBe('about:blank');
    expect(error.title).toBe("I'm a Teapot");
    expect(error.detail).toBe("I'm a Teapot");
    expect(error.errors).toBeUndefined();
    expect(error.extensions).toBeUndefined();
  });

  it('accepts the bounds 400 and 599', () => {
    expect(new HttpError(400).status).toBe(400);
    expect(new HttpError(599).status).toBe(599);
    expect(new HttpError(599).title).toBe('Error');
  });

  for (const status of [0, 200, 302, 399, 600, 1000, -404, 404.5, Number.NaN]) {
    it(`refuses status ${status}`, () => {
      expect(() => new HttpError(status)).toThrow(TypeError);
    });
  }

  it('refuses a status given as a string', () => {
    expect(() => new HttpError('404' as unknown as number)).toThrow(TypeError);
  });

  it('exposes detail for 4xx only', () => {
    expect(new HttpError(499).expose).toBe(true);
    expect(new HttpError(500).expose).toBe(false);
  });
});
