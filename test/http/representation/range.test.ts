import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Middleware } from '../../../src/core/compose.js';
import { silentLogger } from '../../../src/diagnostics/index.js';
import { formatHttpDate } from '../../../src/http/representation/conditional.js';
import { type ByteRange, parseRange } from '../../../src/http/representation/range.js';
import {
  type RangeSource,
  sendRepresentation,
} from '../../../src/http/representation/representation.js';
import { closeAll, type Listening, requestBytes, serve } from '../../helpers/http.js';

const SIZE = 1000;
const BODY = Buffer.from(
  Array.from({ length: SIZE }, (_, i) => 'abcdefghijklmnopqrstuvwxyz'[i % 26]).join(''),
);
const SMALL = 'abcdefghijklmnopqrstuvwxyz';
const ETAG = '"v1"';
const MODIFIED = new Date('2024-05-01T12:00:00.500Z');
const MODIFIED_HTTP = formatHttpDate(MODIFIED);
const TYPE = 'text/plain; charset=utf-8';

/** The fastest of `runs` timings of `work`, in milliseconds. */
function fastest(work: () => void, runs = 5): number {
  let best = Number.POSITIVE_INFINITY;
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    work();
    best = Math.min(best, performance.now() - started);
  }
  return best;
}

/** A streamed source over BODY, in chunks of 7 bytes to exercise the piping. */
function streamed(body: Buffer): RangeSource {
  return {
    size: body.length,
    stream: (start, end) => {
      const slice = body.subarray(start, end + 1);
      return Readable.from(
        Array.from({ length: Math.ceil(slice.length / 7) }, (_, i) =>
          slice.subarray(i * 7, i * 7 + 7),
        ),
      );
    },
  };
}

const failing: RangeSource = {
  size: SIZE,
  stream: () =>
    new Readable({
      read() {
        this.push(BODY.subarray(0, 10));
        this.destroy(new Error('disk gone'));
      },
    }),
};

const app: Middleware = async (req, res, next) => {
  const options = { contentType: TYPE, etag: ETAG, lastModified: MODIFIED };
  const headers = { 'Cache-Control': 'no-cache' };
  switch (req.url) {
    case '/buffer':
      return sendRepresentation(req, res, BODY, { ...options, headers });
    case '/stream':
      return sendRepresentation(req, res, streamed(BODY), { ...options, headers });
    case '/small':
      return sendRepresentation(req, res, SMALL, options);
    case '/empty':
      return sendRepresentation(req, res, '', options);
    case '/empty-stream':
      return sendRepresentation(req, res, streamed(Buffer.alloc(0)), options);
    case '/weak':
      return sendRepresentation(req, res, BODY, { contentType: TYPE, etag: 'W/"v1"' });
    case '/failing':
      return sendRepresentation(req, res, failing, options);
    default:
      return next();
  }
};

/** A request to the suite's server, the body kept as bytes. */
const get = (path: string, headers: Record<string, string> = {}, method = 'GET') =>
  requestBytes(listening, path, headers, method);

/** The multipart/byteranges body expected for `parts` (RFC 9110 §14.6), rebuilt independently. */
function expectedMultipart(boundary: string, parts: readonly [number, number][], body: Buffer) {
  const chunks: Buffer[] = [];
  parts.forEach(([start, end], i) => {
    const crlf = i === 0 ? '' : '\r\n';
    chunks.push(
      Buffer.from(
        `${crlf}--${boundary}\r\nContent-Type: ${TYPE}\r\nContent-Range: bytes ${start}-${end}/${body.length}\r\n\r\n`,
      ),
      body.subarray(start, end + 1),
    );
  });
  chunks.push(Buffer.from(`\r\n--${boundary}--\r\n`));
  return Buffer.concat(chunks);
}

/** Parses a multipart/byteranges body as a client would: each part's headers and bytes. */
function parseMultipart(boundary: string, body: Buffer) {
  const text = body.toString('latin1');
  const delimiter = `--${boundary}`;
  const sections = text.split(new RegExp(`(?:^|\\r\\n)${delimiter}`));
  expect(sections[0]).toBe(''); // no preamble
  expect(sections.at(-1)).toBe('--\r\n'); // the close delimiter
  return sections.slice(1, -1).map((section) => {
    const end = section.indexOf('\r\n\r\n');
    const lines = section.slice(2, end).split('\r\n');
    const headers = Object.fromEntries(
      lines.map((line) => [
        line.slice(0, line.indexOf(':')).toLowerCase(),
        line.slice(line.indexOf(':') + 2),
      ]),
    );
    return { headers, data: Buffer.from(section.slice(end + 4), 'latin1') };
  });
}

type Expect = { status: 200 } | { status: 206; parts: [number, number][] } | { status: 416 };

interface Row {
  name: string;
  range?: string;
  ifRange?: string;
  expect: Expect;
}

const huge = '99999999999999999999';
const CORPUS: Row[] = [
  { name: 'no Range', expect: { status: 200 } },
  { name: 'first byte', range: 'bytes=0-0', expect: { status: 206, parts: [[0, 0]] } },
  { name: 'first half', range: 'bytes=0-499', expect: { status: 206, parts: [[0, 499]] } },
  { name: 'open end', range: 'bytes=500-', expect: { status: 206, parts: [[500, 999]] } },
  { name: 'suffix', range: 'bytes=-100', expect: { status: 206, parts: [[900, 999]] } },
  {
    name: 'suffix longer than all',
    range: 'bytes=-2000',
    expect: { status: 206, parts: [[0, 999]] },
  },
  { name: 'last byte clamped', range: 'bytes=0-99999', expect: { status: 206, parts: [[0, 999]] } },
  {
    name: 'last byte exactly',
    range: 'bytes=999-999',
    expect: { status: 206, parts: [[999, 999]] },
  },
  { name: 'first byte past the end', range: 'bytes=1000-', expect: { status: 416 } },
  { name: 'empty suffix', range: 'bytes=-0', expect: { status: 416 } },
  { name: 'last before first', range: 'bytes=5-1', expect: { status: 200 } },
  { name: 'space after =', range: 'bytes= 0-1', expect: { status: 200 } },
  { name: 'space inside a spec', range: 'bytes=0 - 1', expect: { status: 200 } },
  { name: 'other unit', range: 'items=0-1', expect: { status: 200 } },
  { name: 'missing =', range: 'bytes0-1', expect: { status: 200 } },
  { name: 'empty set', range: 'bytes=', expect: { status: 200 } },
  { name: 'only commas', range: 'bytes=,,', expect: { status: 200 } },
  { name: 'trailing comma', range: 'bytes=0-1,', expect: { status: 206, parts: [[0, 1]] } },
  { name: 'unit in capitals', range: 'Bytes=0-1', expect: { status: 206, parts: [[0, 1]] } },
  {
    name: 'whitespace around commas',
    range: 'bytes=0-9 ,\t500-509',
    expect: {
      status: 206,
      parts: [
        [0, 9],
        [500, 509],
      ],
    },
  },
  {
    name: 'empty element',
    range: 'bytes=0-9,,500-509',
    expect: {
      status: 206,
      parts: [
        [0, 9],
        [500, 509],
      ],
    },
  },
  {
    name: '0-0 forty times (coalesced)',
    range: `bytes=${Array(40).fill('0-0').join(',')}`,
    expect: { status: 206, parts: [[0, 0]] },
  },
  {
    name: '0-0 sixty times (too many)',
    range: `bytes=${Array(60).fill('0-0').join(',')}`,
    expect: { status: 200 },
  },
  {
    name: '0-0 three thousand times',
    range: `bytes=${Array(3000).fill('0-0').join(',')}`,
    expect: { status: 200 },
  },
  {
    name: 'fifteen hundred scattered ranges',
    range: `bytes=${Array.from({ length: 1500 }, (_, i) => `${(i * 7) % 997}-${(i * 7) % 997}`).join(',')}`,
    expect: { status: 200 },
  },
  {
    name: '20-digit last byte',
    range: `bytes=0-${huge}`,
    expect: { status: 206, parts: [[0, 999]] },
  },
  { name: '20-digit first byte', range: `bytes=${huge}-`, expect: { status: 416 } },
  { name: '20-digit suffix', range: `bytes=-${huge}`, expect: { status: 206, parts: [[0, 999]] } },
  { name: '20-digit first, small last', range: `bytes=${huge}-5`, expect: { status: 200 } },
  {
    name: 'leading zeros',
    range: 'bytes=000000000000000000010-0000000000000000000019',
    expect: { status: 206, parts: [[10, 19]] },
  },
  { name: 'negative first byte', range: 'bytes=-5-10', expect: { status: 200 } },
  { name: 'double minus', range: 'bytes=--5', expect: { status: 200 } },
  { name: 'letters', range: 'bytes=abc', expect: { status: 200 } },
  { name: 'hex', range: 'bytes=0x10-20', expect: { status: 200 } },
  { name: 'parameter', range: 'bytes=0-1;q=1', expect: { status: 200 } },
  { name: 'two units', range: 'bytes=0-1, bytes=2-3', expect: { status: 200 } },
  {
    name: 'adjacent (coalesced)',
    range: 'bytes=0-1,2-3',
    expect: { status: 206, parts: [[0, 3]] },
  },
  {
    name: 'overlapping (coalesced)',
    range: 'bytes=0-10,5-20',
    expect: { status: 206, parts: [[0, 20]] },
  },
  {
    name: 'one out of order (kept in the order asked)',
    range: 'bytes=900-909,100-109',
    expect: {
      status: 206,
      parts: [
        [900, 909],
        [100, 109],
      ],
    },
  },
  {
    name: 'three descending parts',
    range: 'bytes=900-909,700-709,500-509,300-309',
    expect: { status: 200 },
  },
  {
    name: 'overlaps merged, order of first request kept',
    range: 'bytes=600-650,0-9,640-700,5-12',
    expect: {
      status: 206,
      parts: [
        [600, 700],
        [0, 12],
      ],
    },
  },
  {
    name: 'one unsatisfiable among satisfiable',
    range: 'bytes=0-1,1000-2000',
    expect: { status: 206, parts: [[0, 1]] },
  },
  { name: 'all unsatisfiable', range: 'bytes=1000-1001,2000-', expect: { status: 416 } },
  {
    name: 'If-Range strong match',
    range: 'bytes=0-1',
    ifRange: ETAG,
    expect: { status: 206, parts: [[0, 1]] },
  },
  { name: 'If-Range weak tag', range: 'bytes=0-1', ifRange: 'W/"v1"', expect: { status: 200 } },
  { name: 'If-Range other tag', range: 'bytes=0-1', ifRange: '"v0"', expect: { status: 200 } },
  {
    name: 'If-Range exact date',
    range: 'bytes=0-1',
    ifRange: MODIFIED_HTTP,
    expect: { status: 206, parts: [[0, 1]] },
  },
  {
    name: 'If-Range wrong date',
    range: 'bytes=0-1',
    ifRange: 'Wed, 01 May 2024 12:00:01 GMT',
    expect: { status: 200 },
  },
  { name: 'If-Range garbage', range: 'bytes=0-1', ifRange: 'yesterday', expect: { status: 200 } },
  {
    name: 'If-Range failing on a 416 range',
    range: 'bytes=5000-',
    ifRange: '"v0"',
    expect: { status: 200 },
  },
  { name: 'If-Range without Range', ifRange: '"v0"', expect: { status: 200 } },
];

let listening: Listening;

beforeAll(async () => {
  listening = await serve(app, { logger: silentLogger });
});

afterAll(closeAll);

describe.each(['/buffer', '/stream'])('sendRepresentation on %s: the hostile corpus', (path) => {
  it('has at least 25 rows', () => expect(CORPUS.length).toBeGreaterThanOrEqual(25));

  it.each(CORPUS)('$name', async (row) => {
    const headers: Record<string, string> = {};
    if (row.range !== undefined) headers.Range = row.range;
    if (row.ifRange !== undefined) headers['If-Range'] = row.ifRange;
    const reply = await get(path, headers);
    expect(reply.status).toBe(row.expect.status);
    expect(reply.headers['accept-ranges']).toBe('bytes');
    if (row.expect.status === 416) {
      expect(reply.headers['content-range']).toBe(`bytes */${SIZE}`);
      expect(reply.headers['content-type']).toBe('application/problem+json');
      const problem = JSON.parse(reply.body.toString()) as Record<string, unknown>;
      expect(problem).toMatchObject({ status: 416, title: 'Range Not Satisfiable' });
      return;
    }
    expect(reply.headers['cache-control']).toBe('no-cache');
    expect(reply.headers.etag).toBe(ETAG);
    expect(reply.headers['last-modified']).toBe(MODIFIED_HTTP);
    if (row.expect.status === 200) {
      expect(reply.headers['content-range']).toBeUndefined();
      expect(reply.headers['content-type']).toBe(TYPE);
      expect(reply.headers['content-length']).toBe(String(SIZE));
      expect(reply.body.equals(BODY)).toBe(true);
      return;
    }
    const { parts } = row.expect;
    if (parts.length === 1) {
      const [[start, end]] = parts as [[number, number]];
      expect(reply.headers['content-type']).toBe(TYPE);
      expect(reply.headers['content-range']).toBe(`bytes ${start}-${end}/${SIZE}`);
      expect(reply.headers['content-length']).toBe(String(end - start + 1));
      expect(reply.body.equals(BODY.subarray(start, end + 1))).toBe(true);
      return;
    }
    const boundary = /^multipart\/byteranges; boundary=(portico-[0-9a-f]{24})$/.exec(
      reply.headers['content-type'] ?? '',
    )?.[1];
    expect(boundary).toBeDefined();
    expect(reply.headers['content-range']).toBeUndefined();
    expect(reply.headers['content-length']).toBe(String(reply.body.length));
    expect(reply.body.equals(expectedMultipart(boundary!, parts, BODY))).toBe(true);
    const parsed = parseMultipart(boundary!, reply.body);
    expect(parsed.map((p) => p.headers)).toEqual(
      parts.map(([s, e]) => ({ 'content-type': TYPE, 'content-range': `bytes ${s}-${e}/${SIZE}` })),
    );
    expect(parsed.map((p) => p.data.toString())).toEqual(
      parts.map(([s, e]) => BODY.subarray(s, e + 1).toString()),
    );
  });
});

describe('sendRepresentation', () => {
  it('answers HEAD with the headers of the GET and no body', async () => {
    const [head, whole] = await Promise.all([get('/stream', {}, 'HEAD'), get('/stream')]);
    expect(head.status).toBe(200);
    expect(head.body.length).toBe(0);
    for (const name of [
      'content-length',
      'content-type',
      'etag',
      'last-modified',
      'accept-ranges',
    ]) {
      expect(head.headers[name]).toBe(whole.headers[name]);
    }
  });

  it('ignores Range on HEAD (ranges are defined for GET only, §14.2)', async () => {
    const head = await get('/buffer', { Range: 'bytes=0-1' }, 'HEAD');
    expect(head.status).toBe(200);
    expect(head.headers['content-length']).toBe(String(SIZE));
    expect(head.headers['content-range']).toBeUndefined();
  });

  it('ignores Range on other methods', async () => {
    const post = await get('/buffer', { Range: 'bytes=0-1' }, 'POST');
    expect(post.status).toBe(200);
    expect(post.body.equals(BODY)).toBe(true);
  });

  it('answers 304 before looking at the range', async () => {
    const reply = await get('/buffer', { Range: 'bytes=0-1', 'If-None-Match': ETAG });
    expect(reply.status).toBe(304);
    expect(reply.body.length).toBe(0);
    expect(reply.headers['content-range']).toBeUndefined();
    expect(reply.headers.etag).toBe(ETAG);
  });

  it('answers 304 before an unsatisfiable range', async () => {
    const reply = await get('/buffer', {
      Range: 'bytes=5000-',
      'If-Modified-Since': MODIFIED_HTTP,
    });
    expect(reply.status).toBe(304);
  });

  it('answers 412 before looking at the range', async () => {
    const reply = await get('/stream', { Range: 'bytes=0-1', 'If-Match': '"v0"' });
    expect(reply.status).toBe(412);
    expect(reply.headers['content-range']).toBeUndefined();
    expect(reply.headers['content-type']).toBe('application/problem+json');
  });

  it('answers HEAD with an unsatisfiable Range as the whole (200)', async () => {
    const reply = await get('/buffer', { Range: 'bytes=5000-' }, 'HEAD');
    expect(reply.status).toBe(200);
    expect(reply.headers['content-length']).toBe(String(SIZE));
    expect(reply.body.length).toBe(0);
  });

  it('answers a 416 problem without Content-Length mismatch', async () => {
    const reply = await get('/buffer', { Range: 'bytes=5000-' });
    expect(reply.status).toBe(416);
    expect(reply.headers['content-length']).toBe(String(reply.body.length));
    expect(reply.headers.etag).toBeUndefined();
  });

  it('answers the whole when the multipart body would be no smaller', async () => {
    const reply = await get('/small', { Range: 'bytes=0-1,4-5' });
    expect(reply.status).toBe(200);
    expect(reply.body.toString()).toBe(SMALL);
  });

  it('uses a strong ETag only for If-Range', async () => {
    const reply = await get('/weak', { Range: 'bytes=0-1', 'If-Range': 'W/"v1"' });
    expect(reply.status).toBe(200);
    expect(reply.body.length).toBe(SIZE);
  });

  it.each(['/empty', '/empty-stream'])('serves an empty representation (%s)', async (path) => {
    const int = await get(path, { Range: 'bytes=0-1' });
    expect(int.status).toBe(416);
    expect(int.headers['content-range']).toBe('bytes */0');
    const suffix = await get(path, { Range: 'bytes=-5' });
    expect(suffix.status).toBe(200);
    expect(suffix.headers['content-length']).toBe('0');
    expect((await get(path)).status).toBe(200);
  });

  it('ends the connection when the source fails midway, and keeps serving', async () => {
    await expect(get('/failing')).rejects.toThrow();
    expect((await get('/buffer', { Range: 'bytes=0-1' })).status).toBe(206);
  });
});

describe('parseRange', () => {
  const ranges = (...pairs: [number, number][]): { type: 'ranges'; ranges: ByteRange[] } => ({
    type: 'ranges',
    ranges: pairs.map(([start, end]) => ({ start, end })),
  });

  it('tells none, ignored and unsatisfiable apart', () => {
    expect(parseRange(undefined, 10)).toEqual({ type: 'none' });
    expect(parseRange('items=0-1', 10)).toEqual({ type: 'ignored', reason: 'unit' });
    expect(parseRange('bytes=5-1', 10)).toEqual({ type: 'ignored', reason: 'malformed' });
    expect(parseRange('=0-1', 10)).toEqual({ type: 'ignored', reason: 'malformed' });
    expect(parseRange('bytes=10-', 10)).toEqual({ type: 'unsatisfiable' });
    expect(parseRange('bytes=-5', 0)).toEqual({ type: 'ignored', reason: 'empty' });
    expect(parseRange('bytes=0-', 0)).toEqual({ type: 'unsatisfiable' });
  });

  it('honours maxRanges and maxOutOfOrder', () => {
    expect(parseRange('bytes=0-0,2-2,4-4', 10, { maxRanges: 2 })).toEqual({
      type: 'ignored',
      reason: 'too-many',
    });
    expect(parseRange('bytes=0-0,2-2', 10, { maxRanges: 2 })).toEqual(ranges([0, 0], [2, 2]));
    expect(parseRange('bytes=4-4,2-2', 10, { maxOutOfOrder: 0 })).toEqual({
      type: 'ignored',
      reason: 'out-of-order',
    });
    expect(() => parseRange('bytes=0-1', 10, { maxRanges: 0 })).toThrow(TypeError);
  });

  it('never throws on absurd numbers', () => {
    const big = '9'.repeat(400);
    expect(parseRange(`bytes=0-${big}`, 10)).toEqual(ranges([0, 9]));
    expect(parseRange(`bytes=${big}-${big}`, 10)).toEqual({ type: 'unsatisfiable' });
    expect(parseRange(`bytes=-${big}`, Number.MAX_SAFE_INTEGER)).toEqual(
      ranges([0, Number.MAX_SAFE_INTEGER - 1]),
    );
    expect(parseRange(`bytes=${Number.MAX_SAFE_INTEGER + 2}-`, Number.MAX_SAFE_INTEGER)).toEqual({
      type: 'unsatisfiable',
    });
  });

  it('reads a field of 16 KiB of commas quickly', () => {
    for (const hostile of [`bytes=${','.repeat(16_384)}`, `bytes=0-0${',0-0'.repeat(4000)}`]) {
      const started = performance.now();
      expect(parseRange(hostile, 10).type).toBe('ignored');
      // the first (cold) read: generous enough for a loaded machine, far below a
      // backtracking or quadratic parse
      expect(performance.now() - started).toBeLessThan(1_000);
      // and at most 10 times a benign field of the same size read in full (every range, with
      // `maxRanges` high enough), however fast the machine: the fastest of a few runs of each
      // (a run the scheduler interrupts is not the fastest), with 2 ms for the clock's grain
      const benign = `bytes=${'0-9,'.repeat(Math.floor((hostile.length - 9) / 4))}0-9`;
      const full = { maxRanges: hostile.length };
      expect(parseRange(benign, 10, full).type).toBe('ranges');
      expect(fastest(() => parseRange(hostile, 10))).toBeLessThan(
        10 * fastest(() => parseRange(benign, 10, full)) + 2,
      );
    }
  });
});
