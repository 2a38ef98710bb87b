import { ALGORITHMS, jwtFixture, TOKENS } from './fixture.js';
import type { OpsComparison } from './types.js';

const tokens = TOKENS.toLocaleString('en-US');

/** JWT verification in-process: portico's verifier against `jose` alone and fast-jwt. */
export const jwtComparison: OpsComparison = {
  kind: 'ops',
  name: 'jwt',
  title: 'JWT verification in-process',
  description:
    'Tokens verified per second by one JWT verifier in one process, no HTTP: per algorithm ' +
    '(RS256 with a 2048-bit key, ES256 on P-256, HS256 with a 32-byte secret) every verifier ' +
    'checks the same tokens (`iss`, `aud`, `sub`, `iat`, `exp` 15 min, minted for the run), ' +
    'requiring the issuer, the audience and the algorithm. `jose` 6 `jwtVerify(token, key, ' +
    '{ algorithms, issuer, audience })` alone is the floor (no cache), given the key as a ' +
    '`KeyObject` (HS256: the secret’s bytes) and, in a row of its own, imported once as a ' +
    '`CryptoKey` (`importSPKI`, HS256 `crypto.subtle.importKey`); fast-jwt 6 ' +
    '`createVerifier({ key, algorithms, allowedIss, allowedAud, cache })` runs with its cache ' +
    '(`cache: true`) and without; portico runs `createJwtVerifier({ publicKey | secret, ' +
    'issuer, audience, algorithms })` from its build, with its verified-token cache (the ' +
    'default) and with `cache: false`. Two workloads: the same token every time (a cache’s ' +
    `best case) and ${tokens} distinct tokens in turn (all fit both caches). Target: portico ` +
    'with its cache at fast-jwt’s cached figure or more, and with `cache: false` at 95 % or ' +
    'more of `jose` with the key imported once.',
  baseline: 'jose',
  secondaryBaseline: 'fast-jwt',
  groups: ALGORITHMS,
  variants: [
    { name: 'jose', label: 'jose jwtVerify (floor)' },
    { name: 'jose-imported', label: 'jose jwtVerify, key imported once (CryptoKey)' },
    { name: 'fast-jwt', label: 'fast-jwt, cache' },
    { name: 'fast-jwt-nocache', label: 'fast-jwt, no cache' },
    { name: 'portico', label: 'portico, cache' },
    { name: 'portico-nocache', label: 'portico, cache: false' },
  ],
  workloads: [
    { name: 'same', label: 'Same token every time' },
    { name: 'distinct', label: `${tokens} distinct tokens, round-robin` },
  ],
  entry: 'bench/jwt/verifier.ts',
  durationMs: { full: 450, quick: 200 },
  warmupMs: { full: 200, quick: 100 },
  unit: { rate: 'tokens/s', each: 'token' },
  setup: jwtFixture,
  inputs:
    `per algorithm, a key (RS256: RSA-2048 pair, ES256: P-256 pair, HS256: 32 random bytes as ` +
    `43 base64url characters) and ${tokens} tokens signed with it by \`jose\` \`SignJWT\`, ` +
    'header `{ alg, typ: JWT }`, claims `iss`, `aud`, `sub` (`bench-user-<i>`), `iat`, `exp` ' +
    '(15 min); the "same token" is token 0. Public keys go to every verifier as the same SPKI ' +
    'PEM (`jose` gets it as a `KeyObject`).',
  notes: [
    'Before it is measured, each verifier must accept token 0 with its `sub`, `iss` and ' +
      '`aud`, refuse token 0’s claims signed by another key of the same kind, refuse a token of ' +
      'the right key for another audience, each of these twice (so a cached verifier answers ' +
      'the second time from its cache: a refusal must not come back as a success), and ' +
      `accept token ${TOKENS - 1}; else the run aborts.`,
    `Cache sizes: fast-jwt \`cache: true\` is its default size, 1,000 entries (an LRU, ` +
      'mnemonist; entries kept 10 min or to `exp`); portico’s default is 10,000 (an LRU ' +
      'over a `Map`, to `exp`). They are left at their defaults: the distinct workload ' +
      `(${tokens} tokens, each verified at least once during the warm-up) fits both, so after ` +
      'the warm-up every verification of a cached row is a hit and the size does not change ' +
      'the work per hit. fast-jwt also stores refusals, but with its default `errorCacheTTL` ' +
      '(−1) they expire at once and the warm-up evicts them.',
    'The cache key: fast-jwt hashes the whole token (SHA-256 for a *256 algorithm, hex, after ' +
      'decoding the header to pick the hash), portico takes its SHA-256 (base64url, one-shot ' +
      '`crypto.hash`); both then check the entry’s expiry. fast-jwt with a fixed key verifies ' +
      'synchronously (`node:crypto` `createVerify`/`createHmac`) and returns the claims; ' +
      '`jose` and portico verify with WebCrypto (`crypto.subtle`, a threadpool job and a ' +
      'promise per call) and return a promise of `{ payload, protectedHeader }`: that, not ' +
      'the checks around it, is most of the gap between the rows without a cache. Every call ' +
      'is awaited the same way.',
    'portico’s cached rate is lower on the same token than over many: each hit moves its ' +
      'entry to the end of a `Map` (delete, then set), and V8 keeps deleted entries in the ' +
      'key’s hash chain until the table is rebuilt, so one key hit over and over walks a ' +
      'growing chain.',
    'Numbers from a shared 2-core machine are noisy: compare the ratios of a round, not ' +
      'absolute rates across runs.',
  ],
};
