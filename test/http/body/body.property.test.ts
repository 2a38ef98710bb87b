// Property tests of the body readers' media-type checks: any Content-Type is either accepted or
// a 415 problem, and the decision follows the media type and charset alone.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { HttpError } from '../../../src/core/errors/errors.js';
import { readForm, readJson, readText } from '../../../src/http/body/body.js';
import { caseTally } from '../../helpers/arbitraries.js';
import { fakeRequest } from '../../helpers/fake-http.js';

const RUNS = { numRuns: 500 };

/** A body every reader takes: valid JSON, a valid form, plain text. */
const BODY = '{"a":1}';

const readers = {
  json: { read: readJson, types: ['application/json'], suffix: '+json' },
  form: { read: readForm, types: ['application/x-www-form-urlencoded'], suffix: undefined },
  text: { read: readText, types: ['text/plain'], suffix: undefined },
} as const;
type ReaderName = keyof typeof readers;
const readerName = fc.constantFrom<ReaderName>('json', 'form', 'text');

async function outcome(name: ReaderName, contentType: string | undefined) {
  const headers: [string, string][] =
    contentType === undefined ? [] : [['Content-Type', contentType]];
  const req = fakeRequest({ method: 'POST', headers, body: BODY });
  return Promise.resolve(readers[name].read(req)).then(
    () => ({ ok: true as const }),
    (error: unknown) => ({ ok: false as const, error }),
  );
}

const TCHAR = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
const token = fc.string({ unit: fc.constantFrom(...TCHAR), minLength: 1, maxLength: 10 });
const casing = (word: string) =>
  fc
    .array(fc.boolean(), { minLength: word.length, maxLength: word.length })
    .map((up) => [...word].map((c, i) => (up[i] ? c.toUpperCase() : c.toLowerCase())).join(''));

/** A media type from the grammar: the known ones in any case, +json ones, or any type/subtype. */
const mediaType = fc.oneof(
  casing('application/json'),
  casing('application/x-www-form-urlencoded'),
  casing('text/plain'),
  token.map((t) => `application/${t}+json`),
  fc.tuple(token, token).map(([t, s]) => `${t}/${s}`),
);
/** Media types `name` takes (its own in any case, +json ones for json), or any other. */
const mediaTypeFor = (name: ReaderName) =>
  fc.oneof(
    {
      weight: 2,
      arbitrary:
        name === 'json'
          ? fc.oneof(
              casing('application/json'),
              token.map((t) => `application/${t}+json`),
            )
          : casing(readers[name].types[0]),
    },
    { weight: 1, arbitrary: mediaType },
  );
const quoted = (v: string) => `"${v.replace(/[\\"]/g, '\\$&')}"`;
const charset = fc.oneof(
  casing('utf-8'),
  casing('utf8'),
  casing('us-ascii'),
  fc.constantFrom('latin1', 'iso-8859-1', 'utf-16', 'UTF-7'),
  token,
);
/**
 * `type/subtype` with parameters, charset among them or not, values as tokens or quoted; with
 * a reader, its own media types are the more likely.
 */
const wellFormedFor = (name?: ReaderName) =>
  fc
    .record({
      type: name === undefined ? mediaType : mediaTypeFor(name),
      charset: fc.option(fc.tuple(charset, fc.boolean()), { nil: undefined }),
      params: fc.array(
        fc.tuple(
          token.filter((n) => n.toLowerCase() !== 'charset'),
          fc.string({ unit: 'grapheme-ascii', maxLength: 8 }),
        ),
        { maxLength: 2 },
      ),
      space: fc.constantFrom('', ' '),
    })
    .map(({ type, charset, params, space }) => {
      let header = type;
      const all: [string, string, boolean][] = params.map(([n, v]) => [n, v, true]);
      if (charset !== undefined) all.splice(0, 0, ['charset', charset[0], charset[1]]);
      for (const [n, v, quote] of all) header += `;${space}${n}=${quote ? quoted(v) : v}`;
      return { header, type: type.toLowerCase(), charset: charset?.[0].toLowerCase() };
    });
const wellFormed = wellFormedFor();

function accepts(name: ReaderName, type: string, charset: string | undefined): boolean {
  const { types, suffix } = readers[name];
  const typeOk =
    (types as readonly string[]).includes(type) || (suffix !== undefined && type.endsWith(suffix));
  const charsetOk =
    charset === undefined || charset === 'utf-8' || charset === 'utf8' || charset === 'us-ascii';
  return typeOk && charsetOk;
}

const expect415 = (result: { ok: boolean; error?: unknown }) => {
  expect(result.ok).toBe(false);
  expect(result.error).toBeInstanceOf(HttpError);
  expect((result.error as HttpError).status).toBe(415);
};

describe('body media-type checks (property)', () => {
  it('any Content-Type string: accepted or a 415 HttpError, never another error', async () => {
    const header = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 60 }),
      fc.string({ unit: 'binary-ascii', maxLength: 60 }).map((s) => `application/json;${s}`),
      fc.string({ unit: 'binary-ascii', maxLength: 60 }).map((s) => `text/plain; charset=${s}`),
      wellFormed.map((w) => w.header),
    );
    const tally = caseTally();
    await fc.assert(
      fc.asyncProperty(readerName, header, async (name, contentType) => {
        tally.case();
        const result = await outcome(name, contentType);
        if (result.ok) return; // accepted: nothing more to check here, see the next property
        tally.hit('refused');
        expect415(result);
      }),
      RUNS,
    );
    // refusals are most of it (measured ~95%): the 415 checks are what this property is about
    tally.expectShares({ refused: 0.75 });
  });

  it('a well-formed Content-Type is accepted exactly when its type and charset are', async () => {
    const tally = caseTally();
    await fc.assert(
      fc.asyncProperty(
        readerName.chain((name) => fc.tuple(fc.constant(name), wellFormedFor(name))),
        async ([name, { header, type, charset }]) => {
          tally.case();
          const result = await outcome(name, header);
          if (accepts(name, type, charset)) {
            tally.hit('accepted');
            expect(result).toEqual({ ok: true });
          } else {
            tally.hit('refused');
            expect415(result);
          }
        },
      ),
      RUNS,
    );
    // the reader's own types are favoured so that both answers are common (measured ~50/50)
    tally.expectShares({ accepted: 0.3, refused: 0.3 });
  });

  it('no Content-Type at all is a 415', async () => {
    const tally = caseTally();
    await fc.assert(
      fc.asyncProperty(readerName, async (name) => {
        tally.case();
        const result = await outcome(name, undefined);
        tally.hit('checked');
        expect415(result);
      }),
      { numRuns: 20 },
    );
    tally.expectShares({ checked: 1 });
  });
});
