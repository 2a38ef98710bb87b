import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  negotiateLanguage,
  parseAcceptLanguage,
  setContentLanguage,
} from '../../../src/http/representation/language.js';
import { closeAll, type Listening, request, serve } from '../../helpers/http.js';

const SUPPORTED = ['en', 'fr', 'pt-BR', 'zh-Hant'];

/** An ordinary header's members, repeated to the length of a hostile one. */
const ORDINARY = 'fr-CA,fr;q=0.9,en-GB;q=0.8,en;q=0.7,de;q=0.5,';

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

describe('parseAcceptLanguage', () => {
  it('reads ranges and weights, highest first, stable among equals', () => {
    expect(parseAcceptLanguage('fr-CA,fr;q=0.9,en;q=0.5')).toEqual([
      { range: 'fr-ca', q: 1 },
      { range: 'fr', q: 0.9 },
      { range: 'en', q: 0.5 },
    ]);
    expect(parseAcceptLanguage('de;q=0.5, en , fr ;  Q=0.5 ,*;q=0.1')).toEqual([
      { range: 'en', q: 1 },
      { range: 'de', q: 0.5 },
      { range: 'fr', q: 0.5 },
      { range: '*', q: 0.1 },
    ]);
    expect(parseAcceptLanguage('en;q=1.000, fr;q=0.')).toEqual([
      { range: 'en', q: 1 },
      { range: 'fr', q: 0 },
    ]);
    expect(parseAcceptLanguage(['fr', 'en;q=0.2'])).toEqual([
      { range: 'fr', q: 1 },
      { range: 'en', q: 0.2 },
    ]);
  });

  it('ignores malformed members and absurd weights', () => {
    for (const member of [
      'en;q=2',
      'en;q=-1',
      'en;q=1e9',
      'en;q=0.0001',
      'en;q=1.5',
      'en;q=NaN',
      'en;q=',
      'en;level=1',
      'toolongtag',
      'en_US',
      'fr-',
      '-fr',
      '12',
      'é',
      'en-abcdefghi',
      '**',
      '',
      ';q=1',
    ]) {
      expect(parseAcceptLanguage(`${member}, de;q=0.3`), member).toEqual([{ range: 'de', q: 0.3 }]);
    }
    expect(parseAcceptLanguage(undefined)).toEqual([]);
    expect(parseAcceptLanguage('')).toEqual([]);
    expect(parseAcceptLanguage(' , ,, ')).toEqual([]);
  });

  it('parses a hostile 8 KiB header quickly, without throwing', () => {
    const hostile = [
      `${'a-'.repeat(4096)}b`,
      `${'en;q=0.5,'.repeat(910)}`,
      `en;q=${'9'.repeat(8192)}`,
      ';'.repeat(8192),
      `${'x-'.repeat(2000)};q=0.5,fr`,
      '\u0000\uffff'.repeat(4096),
    ];
    const read = (header: string) => () => {
      parseAcceptLanguage(header);
      negotiateLanguage(header, SUPPORTED, 'en');
    };
    for (const header of hostile) {
      const started = performance.now();
      expect(() => parseAcceptLanguage(header)).not.toThrow();
      expect(() => negotiateLanguage(header, SUPPORTED, 'en')).not.toThrow();
      // the first (cold) read: generous enough for a loaded machine, far below a backtracking
      // or quadratic parse
      expect(performance.now() - started).toBeLessThan(1_000);
      // and at most 10 times an ordinary header of the same size, however fast the machine:
      // the fastest of a few runs of each (a run the scheduler interrupts is not the
      // fastest), with 2 ms for the clock's grain
      const ordinary = ORDINARY.repeat(Math.ceil(header.length / ORDINARY.length)).slice(
        0,
        header.length,
      );
      expect(fastest(read(header))).toBeLessThan(10 * fastest(read(ordinary)) + 2);
    }
    expect(negotiateLanguage(`${'x-'.repeat(2000)};q=0.5,fr`, SUPPORTED, 'en')).toBe('fr');
  });
});

describe('negotiateLanguage', () => {
  const cases: [string | undefined, string][] = [
    // the order of the client, by weight
    ['fr-CA,fr;q=0.9,en;q=0.5', 'fr'],
    ['en;q=0.5, fr', 'fr'],
    ['de, fr;q=0.2, en;q=0.1', 'fr'],
    // RFC 4647 lookup: truncated one subtag at a time
    ['pt-BR-x-rio', 'pt-BR'],
    ['pt-PT', 'en'],
    ['zh-Hant-TW', 'zh-Hant'],
    ['zh-TW', 'en'],
    ['fr-x-private', 'fr'],
    ['FR-ca', 'fr'],
    // nothing matches: the default
    ['de, ja', 'en'],
    [undefined, 'en'],
    ['', 'en'],
    ['garbage;;;', 'en'],
    // *: matches nothing by itself, lookup then answers the default
    ['*', 'en'],
    ['*, fr', 'fr'],
    ['de, *;q=0.1', 'en'],
    // q=0 excludes
    ['fr;q=0, en', 'en'],
    ['en;q=0', 'fr'],
    ['en;q=0, *', 'fr'],
    ['fr-CA, fr;q=0', 'en'],
    ['*;q=0', 'en'],
    ['en;q=0,fr;q=0,pt;q=0,zh;q=0', 'en'],
  ];
  for (const [header, expected] of cases) {
    it(`${JSON.stringify(header)} → ${expected}`, () => {
      expect(negotiateLanguage(header, SUPPORTED, 'en')).toBe(expected);
    });
  }

  it('takes ranges already parsed, in order, and spells the answer as supported', () => {
    const ranges = [
      { range: 'de', q: 1 },
      { range: 'pt-br', q: 1 },
    ];
    expect(negotiateLanguage(ranges, SUPPORTED, 'en')).toBe('pt-BR');
    expect(negotiateLanguage([], SUPPORTED, 'en')).toBe('en');
    expect(negotiateLanguage('fr', [], 'en')).toBe('en');
    expect(negotiateLanguage('fr', ['en', 'fr'], '')).toBe('fr');
    expect(negotiateLanguage('de', ['en', 'fr'], '')).toBe('');
  });
});

describe('setContentLanguage', () => {
  let server: Listening;

  beforeAll(async () => {
    server = await serve((req: IncomingMessage, res: ServerResponse) => {
      res.setHeader('Vary', 'Accept-Encoding');
      const language = negotiateLanguage(req.headers['accept-language'], ['en', 'fr'], 'en');
      setContentLanguage(res, language);
      setContentLanguage(res, language); // Vary keeps one Accept-Language
      res.end(language === 'fr' ? 'Bonjour' : 'Hello');
    });
  });
  afterAll(closeAll);

  it('sends Content-Language and Vary: Accept-Language, over a real socket', async () => {
    const fr = await request(server, '/', { headers: { 'Accept-Language': 'fr-CA,fr;q=0.9' } });
    expect(fr.status).toBe(200);
    expect(fr.body).toBe('Bonjour');
    expect(fr.headers['content-language']).toBe('fr');
    expect(fr.headers.vary).toBe('Accept-Encoding, Accept-Language');
    const en = await request(server, '/');
    expect(en.body).toBe('Hello');
    expect(en.headers['content-language']).toBe('en');
  });

  it('answers a hostile 8 KiB Accept-Language without a 500', async () => {
    const reply = await request(server, '/', {
      headers: { 'Accept-Language': `${'zz-'.repeat(2700)}zz;q=0.5,fr;q=0.4` },
    });
    expect(reply.status).toBe(200);
    expect(reply.body).toBe('Bonjour');
  });
});
