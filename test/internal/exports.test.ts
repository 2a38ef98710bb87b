// The public face: a small root, and docs/exports.md listing every entry point's exports.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const doc = readFileSync(new URL('../../docs/exports.md', import.meta.url), 'utf8');

const ENTRY_POINTS: Record<string, () => Promise<Record<string, unknown>>> = {
  portico: () => import('../../src/index.js'),
  'portico/core': () => import('../../src/core/index.js'),
  'portico/http': () => import('../../src/http/index.js'),
  'portico/cors': () => import('../../src/cors/index.js'),
  'portico/rate-limit': () => import('../../src/rate-limit/index.js'),
  'portico/auth': () => import('../../src/auth/index.js'),
  'portico/oauth': () => import('../../src/oauth/index.js'),
  'portico/ws': () => import('../../src/ws/index.js'),
  'portico/sse': () => import('../../src/sse/index.js'),
  'portico/realtime': () => import('../../src/realtime/index.js'),
  'portico/webhook': () => import('../../src/webhook/index.js'),
  'portico/redis': () => import('../../src/redis/index.js'),
  'portico/diagnostics': () => import('../../src/diagnostics/index.js'),
  'portico/node': () => import('../../src/adapters/node.js'),
  'portico/express': () => import('../../src/adapters/express.js'),
  'portico/koa': () => import('../../src/adapters/koa.js'),
  'portico/fastify': () => import('../../src/adapters/fastify.js'),
  'portico/fetch': () => import('../../src/adapters/fetch/index.js'),
  'portico/hono': () => import('../../src/adapters/hono.js'),
  'portico/nest': () => import('../../src/adapters/nest.js'),
};

/** The names docs/exports.md lists for one entry point. */
function listed(specifier: string): string[] {
  const row = doc.split('\n').find((line) => line.startsWith(`| \`${specifier}\` |`));
  expect(row, `a row for ${specifier} (node --import tsx scripts/exports-table.ts)`).toBeDefined();
  const cells = row!.split(' | ');
  return [...cells.at(-1)!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!).sort();
}

describe('the public face', () => {
  it('keeps the root to what a service is built from: at most 60 runtime values', async () => {
    const root = Object.keys(await ENTRY_POINTS.portico!());
    expect(root.length).toBeLessThanOrEqual(60);
    // each root value is also found in its own subpath
    const subpaths = await Promise.all(
      Object.entries(ENTRY_POINTS)
        .filter(([name]) => name !== 'portico')
        .map(async ([, load]) => Object.keys(await load())),
    );
    const elsewhere = new Set(subpaths.flat());
    expect(root.filter((name) => !elsewhere.has(name))).toEqual([]);
  });

  for (const [specifier, load] of Object.entries(ENTRY_POINTS)) {
    it(`lists the runtime exports of ${specifier} in docs/exports.md`, async () => {
      const names = Object.keys(await load()).sort();
      expect(listed(specifier)).toEqual(names);
    });
  }
});
