import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root; every child process runs from here. */
export const ROOT = dirname(dirname(dirname(fileURLToPath(import.meta.url))));
export const RESULTS_DIR = join(ROOT, 'bench', 'results');
export const BENCHMARKS_FILE = join(ROOT, 'BENCHMARKS.md');
/** The load generator script, relative to {@link ROOT}. */
export const LOAD_SCRIPT = 'bench/lib/load.ts';
