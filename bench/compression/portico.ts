/**
 * portico: `compression()` (its defaults: br quality 4, gzip level 6, threshold 1 KB) and a
 * router answering with `sendJson`, under `toNodeListener`. It runs the build in `dist/`
 * (what users import), which `npm run bench` builds first; a build that does not export
 * `compression` yet falls back to the sources, saying so on stderr.
 */
import { createServer } from 'node:http';
import { serve } from '../lib/serve.js';
import { PATH, payload } from './body.js';

type Compression = typeof import('../../src/http/compression/compression.js');

// Types from the sources, code from the build: typechecking needs no build, the run uses it.
const dist = (path: string) => new URL(`../../dist/${path}`, import.meta.url).href;
const { createRouter, sendJson, toNodeListener } = (await import(
  dist('index.js')
)) as typeof import('../../src/index.js');
const built = (await import(dist('http.js'))) as Partial<Compression>;
let compression = built.compression;
if (compression === undefined) {
  process.stderr.write('bench/compression/portico.ts: dist/ has no compression(): using src/\n');
  ({ compression } = (await import('../../src/http/compression/compression.js')) as Compression);
}

const listener = toNodeListener([
  compression(),
  createRouter({ [PATH]: { GET: (_req, res) => sendJson(res, 200, payload()) } }),
]);

serve(createServer(listener));
