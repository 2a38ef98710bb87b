/**
 * Vitest setup: the property suites draw a fresh seed every run, and fast-check prints the
 * seed and path of any counterexample it finds. `FC_SEED=<seed> npm test` (or `npx vitest run
 * <file>`) replays that run: every property of every suite starts from the given seed.
 */
import fc from 'fast-check';

const seed = process.env.FC_SEED;
if (seed !== undefined && seed !== '') {
  const value = Number(seed);
  if (!Number.isSafeInteger(value)) throw new Error(`FC_SEED must be an integer, got ${seed}`);
  fc.configureGlobal({ ...fc.readConfigureGlobal(), seed: value });
}
