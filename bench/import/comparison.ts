import type { ImportComparison } from './types.js';

/** Cold import time of portico's build, its heavy dependencies alone, and nothing. */
export const importComparison: ImportComparison = {
  kind: 'import',
  name: 'import',
  title: 'Cold import time',
  description:
    'Milliseconds one `await import(specifier)` takes in a fresh node process: every ' +
    'measurement is a new `node bench/import/child.mjs <specifier>` (plain node, no loader ' +
    'hook, `NODE_OPTIONS` unset), so the module graph is loaded cold — resolved, read, ' +
    'compiled, linked and evaluated — and the process times the import itself with ' +
    '`performance.now()` before `import()` and after its promise settles. Rows: portico ' +
    'from its build (`dist/`, as users run it) — the root `portico` (`dist/index.js`), ' +
    '`portico/http` (`dist/http.js`) and `portico/auth` (`dist/auth.js`) — and, as ' +
    'references, its heavy dependencies imported alone (`jose`, `ws`, `undici`, each its ' +
    'package’s ESM entry as `import()` resolves it), the built-in `node:http`, and a process ' +
    'importing nothing (the timer around an `await`: the floor). The OS file cache is warm ' +
    '(a discarded process per row first); no compile cache is used (`NODE_COMPILE_CACHE` ' +
    'unset). Target: the root at 100 ms or less.',
  baseline: 'nothing',
  rows: [
    {
      name: 'portico',
      label: '`portico` (root)',
      specifier: '../../dist/index.js',
      reference: false,
    },
    {
      name: 'portico-http',
      label: '`portico/http`',
      specifier: '../../dist/http.js',
      reference: false,
    },
    {
      name: 'portico-auth',
      label: '`portico/auth`',
      specifier: '../../dist/auth.js',
      reference: false,
    },
    { name: 'jose', label: '`jose` alone', specifier: 'jose', reference: true },
    { name: 'ws', label: '`ws` alone', specifier: 'ws', reference: true },
    { name: 'undici', label: '`undici` alone', specifier: 'undici', reference: true },
    { name: 'node-http', label: '`node:http`', specifier: 'node:http', reference: true },
    { name: 'nothing', label: 'nothing imported', specifier: null, reference: true },
  ],
  entry: 'bench/import/child.mjs',
  processes: { full: 15, quick: 5 },
  notes: [
    'The root loads none of `jose`, `ws` and `undici` on import (they load on first use; ' +
      '`test/package/package.test.ts` checks it): their rows show what each would add if it ' +
      'did.',
    'Each number is one process’s first import of that specifier; a process imports one ' +
      'row only, so no row finds another’s modules already loaded.',
    'Numbers from a shared 2-core machine are noisy: a few milliseconds either way between ' +
      'runs are noise; the median over processes is the figure the target reads.',
  ],
};
