// The test run StrykerJS repeats for the mutants of one folder of the security core (npm run
// test:mutation; MUTATION_FOLDER names the folder): that folder's suites only, seeded
// properties (a fixed seed, so that a mutant's verdict does not depend on the draw), the same
// aliases as vitest.config.ts.
import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

process.env.FC_SEED ??= '424242';

/** The suites that test each mutated folder. */
const SUITES: Record<string, string[]> = {
  cors: ['test/cors/**/*.test.ts'],
  'rate-limit': ['test/rate-limit/**/*.test.ts'],
  webhook: ['test/webhook/**/*.test.ts'],
  session: ['test/auth/**/*.test.ts'],
  'auth-tokens': ['test/auth/**/*.test.ts'],
  auth: ['test/auth/**/*.test.ts'],
  // the Redis client store keeps clients as clients/stored.ts writes and reads them
  'oauth-clients': ['test/oauth/**/*.test.ts', 'test/redis/client-store.test.ts'],
  'oauth-protocol': ['test/oauth/**/*.test.ts'],
  'oauth-authorize': ['test/oauth/**/*.test.ts'],
  'oauth-pages': ['test/oauth/**/*.test.ts'],
  'oauth-tokens': ['test/oauth/**/*.test.ts'],
  'oauth-grants': ['test/oauth/**/*.test.ts'],
};

const folder = process.env.MUTATION_FOLDER ?? 'cors';
// MUTATION_TESTS (comma-separated globs) narrows a run to the suites being worked on, e.g.
// while writing the tests that kill one file's survivors
const include = process.env.MUTATION_TESTS?.split(',') ?? SUITES[folder];
if (include === undefined) throw new Error(`MUTATION_FOLDER=${folder}: no suites listed`);

export default defineConfig({ ...base, test: { ...base.test, include } });
