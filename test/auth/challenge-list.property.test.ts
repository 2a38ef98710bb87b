// Property tests of the challenge-list reader behind `resource_metadata`: whatever challenge()
// builds, parseChallenges() reads back (schemes, texts, parameter names), and the resource's
// parameters are added exactly once to each Bearer and DPoP challenge, the others untouched.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { challenge } from '../../src/auth/authenticator.js';
import { parseChallenges, resourceChallenges } from '../../src/auth/challenge-list.js';

const RUNS = { numRuns: 500 };

const TCHAR = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
const token = fc.string({ unit: fc.constantFrom(...TCHAR), minLength: 1, maxLength: 10 });
const scheme = fc.oneof(fc.constantFrom('Bearer', 'DPoP', 'Basic', 'ApiKey', 'bearer'), token);
const quotable = fc.string({
  unit: fc.oneof(
    fc.constantFrom('"', '\\', ' ', ',', '=', ';'),
    fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
  ),
  maxLength: 30,
});
const params = fc
  .uniqueArray(fc.tuple(token, quotable), { maxLength: 4, selector: ([n]) => n.toLowerCase() })
  .map((list) => list.filter(([n]) => n.toLowerCase() !== 'resource_metadata'));
const challenges = fc.array(fc.tuple(scheme, params), { minLength: 1, maxLength: 5 });

const built = (list: [string, [string, string][]][]) =>
  list.map(([s, p]) => challenge(s, Object.fromEntries(p)));

describe('parseChallenges()', () => {
  it('reads back every list challenge() builds, joined in one field or not', () => {
    fc.assert(
      fc.property(challenges, (list) => {
        const texts = built(list);
        const parsed = parseChallenges(texts.join(', '));
        expect(parsed?.map((c) => c.text)).toEqual(texts);
        expect(parsed?.map((c) => c.scheme)).toEqual(list.map(([s]) => s.toLowerCase()));
        // (as sets: an object puts integer-like names such as `2` first)
        expect(parsed?.map((c) => [...c.names].sort())).toEqual(
          list.map(([, p]) => p.map(([n]) => n.toLowerCase()).sort()),
        );
      }),
      RUNS,
    );
  });
});

describe('resourceChallenges()', () => {
  it('adds resource_metadata once to each Bearer and DPoP challenge, Bearer first, others as they were', () => {
    fc.assert(
      fc.property(challenges, fc.boolean(), (list, twice) => {
        const texts = built(list);
        const add = { resourceMetadata: 'https://h.example/.well-known/oauth-protected-resource' };
        let out = resourceChallenges(texts, add, 401);
        if (twice) out = resourceChallenges(out, add, 401);
        const parsed = out.flatMap((v) => parseChallenges(v) ?? []);
        expect(parsed).toHaveLength(texts.length);
        const bearers = parsed.filter((c) => c.scheme === 'bearer').length;
        expect(parsed.slice(0, bearers).every((c) => c.scheme === 'bearer')).toBe(true);
        for (const c of parsed) {
          const token = c.scheme === 'bearer' || c.scheme === 'dpop';
          expect(c.names.has('resource_metadata')).toBe(token);
          const count = c.text.split('resource_metadata=').length - 1;
          expect(count >= (token ? 1 : 0)).toBe(true);
        }
        const others = parsed.filter((c) => c.scheme !== 'bearer' && c.scheme !== 'dpop');
        expect(others.map((c) => c.text)).toEqual(
          texts.filter((t) => !/^(bearer|dpop)(\s|$)/i.test(t)),
        );
      }),
      RUNS,
    );
  });
});
