import { describe, expect, it } from 'vitest';
import { formatComment, formatEvent } from '../../src/sse/format.js';

describe('formatEvent', () => {
  it('JSON-encodes data by default and ends with a blank line', () => {
    expect(formatEvent({ data: { text: 'hi' } })).toBe('data: {"text":"hi"}\n\n');
    expect(formatEvent({ data: 'hi' })).toBe('data: "hi"\n\n');
    expect(formatEvent({ data: 'a\nb' })).toBe('data: "a\\nb"\n\n');
  });

  it('writes event, id and retry before the data', () => {
    expect(formatEvent({ id: 7, event: 'message', retry: 1500, data: [1] })).toBe(
      'event: message\nid: 7\nretry: 1500\ndata: [1]\n\n',
    );
    expect(formatEvent({ id: '' })).toBe('id: \n\n');
  });

  it('splits raw data on CRLF, CR and LF into several data lines', () => {
    expect(formatEvent({ data: 'one\r\ntwo\rthree\nfour' }, { json: false })).toBe(
      'data: one\ndata: two\ndata: three\ndata: four\n\n',
    );
    expect(formatEvent({ data: '' }, { json: false })).toBe('data: \n\n');
    expect(formatEvent({ data: 'end\n' }, { json: false })).toBe('data: end\ndata: \n\n');
  });

  it.each([
    ['id', 'a\nb'],
    ['id', 'a\rb'],
    ['id', 'a\0b'],
    ['event', 'x\ny'],
    ['event', 'x\r'],
    ['event', '\0'],
  ])('refuses %s %j', (name, value) => {
    expect(() => formatEvent({ [name]: value, data: 1 })).toThrow(
      expect.objectContaining({ name: 'TypeError', code: 'ERR_INVALID_SSE_FIELD' }),
    );
  });

  it('refuses bad retry, non-string raw data, unencodable data and empty events', () => {
    for (const retry of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => formatEvent({ retry })).toThrow(TypeError);
    }
    expect(() => formatEvent({ data: { a: 1 } }, { json: false })).toThrow(TypeError);
    expect(() => formatEvent({ data: () => 1 })).toThrow(TypeError);
    expect(() => formatEvent({ data: 1n })).toThrow(TypeError);
    expect(() => formatEvent({})).toThrow(TypeError);
    expect(() => formatEvent({ id: {} as unknown as string })).toThrow(TypeError);
  });
});

describe('formatComment', () => {
  it('prefixes every line with a colon', () => {
    expect(formatComment('keep-alive')).toBe(': keep-alive\n\n');
    expect(formatComment()).toBe(':\n\n');
    expect(formatComment('a\r\nb\nc')).toBe(': a\n: b\n: c\n\n');
  });
});
