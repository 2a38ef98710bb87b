import { describe, expect, it } from 'vitest';
import {
  badRequest,
  contentTooLarge,
  forbidden,
  HttpError,
  internalError,
  PorticoError,
  serviceUnavailable,
  tooManyRequests,
  unauthorized,
  unprocessable,
  unsupportedMediaType,
} from '../../src/core/errors/errors.js';
import {
  CloseCode,
  closeCodeFor,
  isApplicationCloseCode,
  isReportedOnlyCloseCode,
  isSendableCloseCode,
  MAX_CLOSE_REASON_BYTES,
  truncateCloseReason,
  WebSocketCloseError,
} from '../../src/ws/close-codes.js';

function isValidUtf8(text: string): boolean {
  const bytes = Buffer.from(text, 'utf8');
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    return true;
  } catch {
    return false;
  }
}

describe('CloseCode', () => {
  it('names every registered code', () => {
    expect(CloseCode).toEqual({
      NORMAL: 1000,
      GOING_AWAY: 1001,
      PROTOCOL_ERROR: 1002,
      UNSUPPORTED_DATA: 1003,
      NO_STATUS: 1005,
      ABNORMAL: 1006,
      INVALID_PAYLOAD: 1007,
      POLICY_VIOLATION: 1008,
      MESSAGE_TOO_BIG: 1009,
      MANDATORY_EXTENSION: 1010,
      INTERNAL_ERROR: 1011,
      SERVICE_RESTART: 1012,
      TRY_AGAIN_LATER: 1013,
      BAD_GATEWAY: 1014,
      TLS_HANDSHAKE: 1015,
    });
    expect(Object.isFrozen(CloseCode)).toBe(true);
  });

  const sendable = [1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014];
  const reportedOnly = [1005, 1006, 1015];

  it.each(Object.entries(CloseCode))('classifies %s (%i)', (_name, code) => {
    expect(isSendableCloseCode(code)).toBe(sendable.includes(code));
    expect(isReportedOnlyCloseCode(code)).toBe(reportedOnly.includes(code));
    expect(isSendableCloseCode(code) && isReportedOnlyCloseCode(code)).toBe(false);
    expect(isApplicationCloseCode(code)).toBe(false);
  });

  it('matches the ws package on every code from 0 to 5999', async () => {
    const { createRequire } = await import('node:module');
    const { dirname, join } = await import('node:path');
    const require = createRequire(import.meta.url);
    const wsLib = join(dirname(require.resolve('ws')), 'lib', 'validation.js');
    const { isValidStatusCode } = require(wsLib) as {
      isValidStatusCode: (code: number) => boolean;
    };
    for (let code = 0; code < 6000; code++) {
      expect(isSendableCloseCode(code), String(code)).toBe(isValidStatusCode(code));
    }
  });

  it('rejects unassigned, reserved and out-of-range codes', () => {
    for (const code of [0, 999, 1004, 1016, 1999, 2999, 5000, 1000.5, Number.NaN]) {
      expect(isSendableCloseCode(code), String(code)).toBe(false);
    }
    expect(isSendableCloseCode(3000)).toBe(true);
    expect(isSendableCloseCode(4999)).toBe(true);
  });

  it('knows the application range 4000–4999', () => {
    expect(isApplicationCloseCode(3999)).toBe(false);
    expect(isApplicationCloseCode(4000)).toBe(true);
    expect(isApplicationCloseCode(4999)).toBe(true);
    expect(isApplicationCloseCode(5000)).toBe(false);
    expect(isApplicationCloseCode(4000.5)).toBe(false);
  });
});

describe('truncateCloseReason', () => {
  const bytes = (s: string) => Buffer.byteLength(s, 'utf8');

  it('keeps a short reason as is', () => {
    expect(truncateCloseReason('')).toBe('');
    expect(truncateCloseReason('bye')).toBe('bye');
    const exact = 'a'.repeat(123);
    expect(truncateCloseReason(exact)).toBe(exact);
  });

  it('cuts ASCII at 123 bytes', () => {
    expect(truncateCloseReason('a'.repeat(200))).toBe('a'.repeat(MAX_CLOSE_REASON_BYTES));
  });

  it('never splits an emoji (4 bytes) at the boundary', () => {
    // 121 bytes of ASCII leave 2: too few for the emoji, which is dropped whole.
    const out = truncateCloseReason(`${'a'.repeat(121)}😀tail`);
    expect(out).toBe('a'.repeat(121));
    expect(isValidUtf8(out)).toBe(true);
    expect(truncateCloseReason(`${'a'.repeat(119)}😀b`)).toBe(`${'a'.repeat(119)}😀`);
  });

  it('never splits a CJK character (3 bytes) at the boundary', () => {
    const out = truncateCloseReason('漢'.repeat(50));
    expect(out).toBe('漢'.repeat(41));
    expect(bytes(out)).toBe(123);
    const shifted = truncateCloseReason(`a${'漢'.repeat(50)}`);
    expect(shifted).toBe(`a${'漢'.repeat(40)}`);
    expect(bytes(shifted)).toBe(121);
  });

  it('always yields valid UTF-8 of at most 123 bytes', () => {
    const pieces = ['a', 'é', '漢', '😀', '👩‍👩‍👧', '\u{10FFFF}'];
    for (let offset = 0; offset < 8; offset++) {
      for (const piece of pieces) {
        const out = truncateCloseReason('x'.repeat(offset) + piece.repeat(200));
        expect(bytes(out)).toBeLessThanOrEqual(123);
        expect(bytes(out)).toBeGreaterThan(119);
        expect(isValidUtf8(out)).toBe(true);
      }
    }
  });

  it('replaces a lone surrogate with U+FFFD and counts it as 3 bytes', () => {
    expect(truncateCloseReason('a\uD800b')).toBe('a\uFFFDb');
    const out = truncateCloseReason(`${'a'.repeat(121)}\uDC00`);
    expect(out).toBe('a'.repeat(121));
  });
});

describe('WebSocketCloseError', () => {
  it('carries a sendable close code and a safe reason', () => {
    const error = new WebSocketCloseError(CloseCode.UNSUPPORTED_DATA, 'é'.repeat(100));
    expect(error).toBeInstanceOf(PorticoError);
    expect(error.name).toBe('WebSocketCloseError');
    expect(error.code).toBe('ERR_WS_CLOSE');
    expect(error.closeCode).toBe(1003);
    expect(error.reason).toBe('é'.repeat(61));
    expect(error.message).toBe(error.reason);
  });

  it('takes a custom code and a cause, and a default message', () => {
    const cause = new Error('inner');
    const error = new WebSocketCloseError(4001, undefined, { code: 'ERR_WS_KICKED', cause });
    expect(error.code).toBe('ERR_WS_KICKED');
    expect(error.cause).toBe(cause);
    expect(error.reason).toBe('');
    expect(error.message).toBe('WebSocket closed with 4001');
  });

  it('refuses a code that may not be sent', () => {
    for (const code of [1005, 1006, 1015, 1004, 2000]) {
      expect(() => new WebSocketCloseError(code)).toThrow(
        expect.objectContaining({ name: 'TypeError', code: 'ERR_INVALID_OPTION' }),
      );
    }
  });
});

describe('closeCodeFor', () => {
  it.each([
    ['400', badRequest(), 1008],
    ['401', unauthorized(), 1008],
    ['403', forbidden(), 1008],
    ['413', contentTooLarge(), 1009],
    ['415', unsupportedMediaType(), 1008],
    ['422', unprocessable([]), 1008],
    ['429', tooManyRequests(1), 1013],
    ['503', serviceUnavailable(), 1013],
    ['500', internalError(), 1011],
    ['502', new HttpError(502), 1011],
  ] as const)('maps HttpError %s', (_status, error, code) => {
    expect(closeCodeFor(error)).toBe(code);
  });

  it('keeps a WebSocketCloseError’s own code', () => {
    expect(closeCodeFor(new WebSocketCloseError(4403, 'no'))).toBe(4403);
  });

  it('answers anything else with 1011', () => {
    expect(closeCodeFor(new Error('boom'))).toBe(1011);
    expect(closeCodeFor(new PorticoError('x', 'ERR_X'))).toBe(1011);
    expect(closeCodeFor('string')).toBe(1011);
    expect(closeCodeFor(undefined)).toBe(1011);
  });
});
