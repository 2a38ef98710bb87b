import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root; every child process runs from here. */
export const ROOT = dirname(dirname(dirname(fileURLToPath(import.meta.url))));
/**
 * Where results and the report go: `bench/results/` and BENCHMARKS.md, or, with
 * `BENCH_OUT_DIR` set (the smoke run of `npm test`), `results/` and BENCHMARKS.md there.
 */
const OUT = process.env.BENCH_OUT_DIR;
export const RESULTS_DIR = OUT ? join(OUT, 'results') : join(ROOT, 'bench', 'results');
export const BENCHMARKS_FILE = join(OUT ?? ROOT, 'BENCHMARKS.md');
/** The load generator script, relative to {@link ROOT}. */
export const LOAD_SCRIPT = 'bench/lib/load.ts';
