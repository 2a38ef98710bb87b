// Property tests of the text/event-stream formatter, read back by a parser written from the
// HTML standard (§9.2.6 "Interpreting an event stream"), over the UTF-8 bytes a client receives.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatComment, formatEvent } from '../../src/sse/format.js';
import { caseTally } from '../helpers/arbitraries.js';

const RUNS = { numRuns: 1000 };

interface ParsedEvent {
  type: string;
  data: string;
  lastEventId: string;
}

/**
 * The event-stream interpretation of the HTML standard: UTF-8 decode (a leading BOM dropped),
 * lines ended by CRLF, LF or CR, fields `event`, `data`, `id` (ignored with a NUL), `retry`,
 * comments, dispatch on a blank line; an event whose data buffer is empty is not dispatched.
 * @see https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation
 */
function parseEventStream(bytes: Uint8Array): { events: ParsedEvent[]; retry?: number } {
  const text = new TextDecoder('utf-8').decode(bytes); // drops one leading BOM
  const events: ParsedEvent[] = [];
  let data = '';
  let type = '';
  let lastEventId = '';
  let idBuffer = '';
  let retry: number | undefined;
  // lines end with CRLF, a lone LF or a lone CR; whatever follows the last break is incomplete
  const lines = text.split(/\r\n|\r|\n/);
  lines.pop();
  for (const line of lines) {
    if (line === '') {
      lastEventId = idBuffer;
      if (data === '') {
        type = '';
        continue;
      }
      if (data.endsWith('\n')) data = data.slice(0, -1);
      events.push({ type: type === '' ? 'message' : type, data, lastEventId });
      data = '';
      type = '';
      continue;
    }
    if (line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    let name = line;
    let value = '';
    if (colon !== -1) {
      name = line.slice(0, colon);
      value = line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
    }
    if (name === 'event') type = value;
    else if (name === 'data') data += `${value}\n`;
    else if (name === 'id') {
      if (!value.includes('\0')) idBuffer = value;
    } else if (name === 'retry') {
      if (/^[0-9]+$/.test(value)) retry = Number(value);
    }
  }
  return retry === undefined ? { events } : { events, retry };
}

const parse = (stream: string) => parseEventStream(new TextEncoder().encode(stream));

/** Text rich in line breaks of every kind, spaces, colons, BOMs and astral characters. */
const richUnit = fc.oneof(
  { weight: 3, arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 }) },
  { weight: 2, arbitrary: fc.constantFrom('\n', '\r', '\r\n', '\n\r', ' ', ':', '\uFEFF', '\0') },
  { weight: 1, arbitrary: fc.constantFrom('data: x', 'id: 1', 'event: e', 'retry: 5') },
);
const richText = fc.string({ unit: richUnit, maxLength: 30 });
/** Any UTF-16 string, lone surrogates included. */
const anyText = fc.string({ unit: 'binary', maxLength: 30 });

const normaliseBreaks = (s: string) => s.replace(/\r\n|\r/g, '\n');

describe('formatEvent (property)', () => {
  it('json: false: the client reads back the data exactly, line breaks as LF', () => {
    const tally = caseTally();
    fc.assert(
      fc.property(
        fc.oneof(
          richText,
          richText.map((s) => s.replace(/\r/g, '')),
        ),
        (data) => {
          tally.case();
          const { events } = parse(formatEvent({ data }, { json: false }));
          tally.hit('checked');
          expect(events).toEqual([
            { type: 'message', data: normaliseBreaks(data), lastEventId: '' },
          ]);
          // and exactly, for data whose only line breaks are LF (half the generator strips CR)
          if (!data.includes('\r')) {
            tally.hit('LF only');
            expect(events[0]!.data).toBe(data);
          }
        },
      ),
      RUNS,
    );
    tally.expectShares({ checked: 1, 'LF only': 0.35 });
  });

  it('json (the default): the client reads back the exact value, any string included', () => {
    const tally = caseTally();
    fc.assert(
      fc.property(fc.oneof(anyText, richText, fc.jsonValue()), (value) => {
        tally.case();
        const { events } = parse(formatEvent({ data: value }));
        tally.hit('checked');
        expect(events).toHaveLength(1);
        expect(events[0]!.data).toBe(JSON.stringify(value));
        if (typeof value === 'string') expect(JSON.parse(events[0]!.data)).toBe(value);
      }),
      RUNS,
    );
    tally.expectShares({ checked: 1 });
  });

  it('id and event: refused with ERR_INVALID_SSE_FIELD iff they hold CR, LF or NUL, else read back', () => {
    const field = fc.option(fc.oneof(richText, anyText), { nil: undefined });
    const tally = caseTally();
    fc.assert(
      fc.property(field, field, richText, (id, event, data) => {
        tally.case();
        let stream: string;
        try {
          stream = formatEvent({ id, event, data }, { json: false });
        } catch (error) {
          tally.hit('refused');
          expect(error).toBeInstanceOf(TypeError);
          expect((error as { code?: string }).code).toBe('ERR_INVALID_SSE_FIELD');
          expect(`${id ?? ''}${event ?? ''}`).toMatch(/[\r\n\0]/);
          return;
        }
        tally.hit('read back');
        expect(`${id ?? ''}${event ?? ''}`).not.toMatch(/[\r\n\0]/);
        const wire = new TextDecoder().decode(new TextEncoder().encode(stream));
        const { events } = parse(stream);
        expect(events).toHaveLength(1);
        // what a client sees is the UTF-8 round trip of the value (a lone surrogate is U+FFFD)
        const seen = (v: string) =>
          new TextDecoder('utf-8', { ignoreBOM: true }).decode(new TextEncoder().encode(v));
        expect(events[0]!.type).toBe(event === undefined || event === '' ? 'message' : seen(event));
        expect(events[0]!.lastEventId).toBe(id === undefined ? '' : seen(id));
        expect(wire.endsWith('\n\n')).toBe(true);
      }),
      RUNS,
    );
    // measured: ~40% refused (rich text is full of line breaks), ~60% read back
    tally.expectShares({ refused: 0.25, 'read back': 0.4 });
  });

  it('numeric ids and retry come through; every output line is one known field', () => {
    const tally = caseTally();
    fc.assert(
      fc.property(
        fc
          .tuple(
            fc.option(fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true })), {
              nil: undefined,
            }),
            fc.option(fc.nat(), { nil: undefined }),
            fc.option(richText, { nil: undefined }),
          )
          // at least one field (a filter, not fc.pre: no case is skipped)
          .filter((fields) => fields.some((f) => f !== undefined)),
        ([id, retry, data]) => {
          tally.case();
          const stream = formatEvent({ id, retry, data }, { json: false });
          const lines = stream.split('\n');
          tally.hit('checked');
          expect(lines.slice(-2)).toEqual(['', '']);
          for (const line of lines.slice(0, -2)) expect(line).toMatch(/^(event|id|retry|data): /);
          const parsed = parse(stream);
          if (retry !== undefined) {
            tally.hit('retry');
            expect(parsed.retry).toBe(retry);
          }
          if (data !== undefined) {
            tally.hit('data');
            expect(parsed.events).toEqual([
              {
                type: 'message',
                data: normaliseBreaks(data),
                lastEventId: id === undefined ? '' : String(id),
              },
            ]);
          }
        },
      ),
      RUNS,
    );
    // each field is there in 5 cases of 6 (fc.option)
    tally.expectShares({ checked: 1, retry: 0.7, data: 0.7 });
  });

  it('a stream of formatted events reads back as the same events, in order', () => {
    const event = fc.record({
      data: richText,
      event: fc.option(fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 6 }), {
        nil: undefined,
      }),
      id: fc.option(fc.string({ unit: 'grapheme-ascii', maxLength: 6 }), { nil: undefined }),
    });
    const tally = caseTally();
    fc.assert(
      fc.property(fc.array(event, { maxLength: 6 }), fc.boolean(), (list, comments) => {
        tally.case();
        const stream = list
          .map((e) => (comments ? formatComment('hb\nbeat') : '') + formatEvent(e, { json: false }))
          .join('');
        let lastId = '';
        const expected = list.map((e) => {
          if (e.id !== undefined) lastId = e.id;
          return {
            type: e.event ?? 'message',
            data: normaliseBreaks(e.data),
            lastEventId: lastId,
          };
        });
        tally.hit(list.length > 0 ? 'events' : 'empty');
        expect(parse(stream).events).toEqual(expected);
      }),
      RUNS,
    );
    tally.expectShares({ events: 0.6 });
  });
});

describe('formatComment (property)', () => {
  it('every line of any text is a comment line, and a client sees no event', () => {
    const tally = caseTally();
    fc.assert(
      fc.property(fc.oneof(richText, anyText), (text) => {
        tally.case();
        const out = formatComment(text);
        tally.hit('checked');
        const lines = out.split('\n');
        expect(lines.slice(-2)).toEqual(['', '']);
        for (const line of lines.slice(0, -2)) {
          expect(line.startsWith(':')).toBe(true);
          expect(line).not.toMatch(/\r/);
        }
        expect(parse(out)).toEqual({ events: [] });
      }),
      RUNS,
    );
    tally.expectShares({ checked: 1 });
  });
});
