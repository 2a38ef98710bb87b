// PorticoErrorCode lists every code portico's errors carry: a code added in src/ without it fails here.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const src = fileURLToPath(new URL('../../src/', import.meta.url));

/**
 * Codes of `TypeError`s (invalid arguments), which are not PorticoErrors, a TSDoc example, and
 * jose's codes that portico/client compares with.
 */
const NOT_PORTICO_ERRORS = new Set([
  'ERR_JWS_SIGNATURE_VERIFICATION_FAILED',
  'ERR_JWT_CLAIM_VALIDATION_FAILED',
  'ERR_INVALID_OPTION',
  'ERR_INVALID_ARG_TYPE',
  'ERR_INVALID_ARG_VALUE',
  'ERR_INVALID_SSE_FIELD',
  'ERR_INVALID_PASSWORD_HASH',
  'ERR_DUPLICATE',
]);

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sources(join(dir, entry.name))
      : entry.name.endsWith('.ts')
        ? [join(dir, entry.name)]
        : [],
  );
}

describe('PorticoErrorCode', () => {
  const union = readFileSync(join(src, 'core/errors/codes.ts'), 'utf8');
  const listed = new Set([...union.matchAll(/\| '(ERR_[A-Z0-9_]+)'/g)].map((m) => m[1]!));

  it('names every code thrown in src/', () => {
    const used = new Set(
      sources(src)
        .filter((file) => !file.endsWith('error-codes.ts'))
        .flatMap((file) => [...readFileSync(file, 'utf8').matchAll(/'(ERR_[A-Z0-9_]+)'/g)])
        .map((m) => m[1]!)
        .filter((code) => !NOT_PORTICO_ERRORS.has(code)),
    );
    expect([...used].filter((code) => !listed.has(code)).sort()).toEqual([]);
    expect(used.size).toBeGreaterThan(50);
  });

  it('names no code that nothing throws', () => {
    const all = sources(src)
      .filter((file) => !file.endsWith('error-codes.ts'))
      .map((file) => readFileSync(file, 'utf8'))
      .join('\n');
    expect([...listed].filter((code) => !all.includes(`'${code}'`))).toEqual([]);
  });
});
