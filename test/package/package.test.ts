// The package as users install it: built and packed from a copy of the project, unpacked into
// throwaway consumer projects that hold only what npm would install (portico's dependencies),
// then loaded from ESM and CommonJS, compiled by TypeScript (node16 ESM and CommonJS, nodenext,
// node20, bundler; no skipLibCheck) and linted by publint and attw. The tarball's size and the
// cold import time of `portico` go to test-results/package-size.json.
import { execFile } from 'node:child_process';
import { readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bin, installConsumer, pack, root, run, write } from '../helpers/packed.js';

/** A few runtime exports per subpath; every subpath of `exports` must be listed. */
const EXPECTED: Record<string, string[]> = {
  portico: ['createHub', 'sendJson', 'toNodeListener', 'cors', 'rateLimit', 'toExpress', 'toKoa'],
  'portico/core': ['compose', 'HttpError', 'sendError', 'sendJson'],
  'portico/http': ['createRouter', 'readJson', 'securityHeaders'],
  'portico/cors': ['cors'],
  'portico/rate-limit': ['rateLimit', 'MemoryRateLimitStore'],
  'portico/auth': ['apiKeyAuth', 'jwtBearer'],
  'portico/oauth': ['createAuthorizationServer'],
  'portico/ws': ['CloseCode', 'createUpgradeHandler'],
  'portico/sse': ['createEventStream'],
  'portico/realtime': ['createHub', 'MemoryBroker'],
  'portico/webhook': ['createWebhookSender'],
  'portico/redis': ['RedisBroker'],
  'portico/diagnostics': ['channels', 'parseTraceparent', 'silentLogger'],
  'portico/client': ['createSignIn', 'upstreamProvider'],
  'portico/node': ['toNodeListener'],
  'portico/express': ['toExpress'],
  'portico/koa': ['toKoa'],
  'portico/fastify': ['toFastify', 'fastifyErrorHandler', 'fastifyNotFound'],
  'portico/fetch': ['toFetchHandler', 'principalOf', 'incomingOf'],
  'portico/hono': ['toHono'],
  // a consumer without Nest cannot load it, and is told why
  'portico/nest': ['needs @nestjs'],
};
const SPECIFIERS = Object.keys(EXPECTED);

let work: string;
let tarball: string;
let packed: { path: string; size: number }[];
let unpackedSize: number;
let pkg: { dependencies: Record<string, string>; exports: Record<string, unknown> };

beforeAll(async () => {
  const packedProject = await pack();
  ({ work, tarball, unpackedSize } = packedProject);
  packed = packedProject.files;
  // Consumers: "app" has only what npm installs with portico (no express, koa, ioredis);
  // "typed" adds @types/node, ioredis and openid-client, as a TypeScript user of portico/redis
  // and portico/client has them.
  // portico itself is a real folder in each, as node and tsc resolve from real paths.
  pkg = await installConsumer(tarball, join(work, 'app'));
  await installConsumer(tarball, join(work, 'typed'), [
    '@types/node',
    'ioredis',
    'openid-client',
    '@nestjs/common',
    '@nestjs/core',
    'reflect-metadata',
    'rxjs',
  ]);
}, 180_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('the packed tarball', () => {
  it('holds only dist, the README, the LICENSE, the CHANGELOG and package.json', () => {
    const paths = packed.map((file) => file.path).sort();
    const unexpected = paths.filter(
      (path) =>
        !/^dist\/[\w-]+\.(js|cjs|d\.ts|d\.cts)$/.test(path) &&
        !['README.md', 'LICENSE', 'CHANGELOG.md', 'package.json'].includes(path),
    );
    expect(unexpected, 'files that should not be published').toEqual([]);
    expect(paths).toEqual(
      expect.arrayContaining(['README.md', 'LICENSE', 'CHANGELOG.md', 'package.json']),
    );
    expect(paths.filter((path) => path.startsWith('dist/index.'))).toHaveLength(4);
  });

  // 600 KiB until issue 38 (serve(), several JWT issuers and their claim rules, durations with
  // units, one problem per framework parser error): 652 KiB then; 700 KiB until issue 40
  // (protected-resource metadata, resource indicators, dynamic registration, client metadata
  // documents): 742 KiB then; 800 KiB until issue 43 (the Fetch, Hono and NestJS adapters):
  // 806 KiB then
  it('weighs at most 900 KiB packed, its size and the cold import time recorded', async () => {
    const size = statSync(tarball).size;
    const coldImportMs = await coldImports('portico', 5);
    const http = await coldImports('portico/http', 5);
    const record = {
      tarballBytes: size,
      unpackedBytes: unpackedSize,
      files: packed.length,
      sourceMapBytes: packed.filter((f) => f.path.endsWith('.map')).reduce((n, f) => n + f.size, 0),
      coldImportMs: { portico: coldImportMs, 'portico/http': http },
    };
    const out = join(root, 'test-results', 'package-size.json');
    write(out, `${JSON.stringify(record, null, 2)}\n`);
    expect(record.sourceMapBytes, 'source maps are not published').toBe(0);
    expect(size, 'tarball bytes').toBeLessThanOrEqual(900 * 1024);
  }, 60_000);

  it('loads neither jose, ws nor undici on import, in ESM or CommonJS (they load on first use)', async () => {
    // A resolve hook notes every package the import reaches, whatever the module format.
    write(
      join(work, 'app', 'hooks.mjs'),
      `import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  const name = /node_modules\\/((?:@[^/]+\\/)?[^/]+)/.exec(resolved.url)?.[1];
  if (name) appendFileSync(process.env.REACHED, name + '\\n');
  return resolved;
}`,
    );
    write(
      join(work, 'app', 'register.mjs'),
      `import { register } from 'node:module';
register('./hooks.mjs', import.meta.url);`,
    );
    const heavy = ['jose', 'ws', 'undici'];
    // CommonJS: require() passes no resolve hook on Node 20, so the script notes what it loads.
    const noteRequires = `const Module = require('node:module');
const { appendFileSync } = require('node:fs');
const load = Module._load;
Module._load = function (request, ...rest) {
  if (!/^(node:|\\.|\\/)/.test(request)) appendFileSync(process.env.REACHED, request + '\\n');
  return load.call(this, request, ...rest);
};
`;
    for (const load of ["await import('portico')", "require('portico')"]) {
      const file = load.startsWith('await') ? 'load.mjs' : 'load.cjs';
      write(join(work, 'app', file), `${file.endsWith('.cjs') ? noteRequires : ''}${load};\n`);
      const reached = await packagesReached(join(work, 'app'), file);
      expect(
        reached.filter((name) => heavy.includes(name)),
        load,
      ).toEqual([]);
      expect(reached, load).toContain('portico');
    }
  });

  it('lists every subpath of exports in this test', () => {
    const subpaths = Object.keys(pkg.exports)
      .filter((key) => key !== './package.json')
      .map((key) => (key === '.' ? 'portico' : `portico/${key.slice(2)}`));
    expect(subpaths.sort()).toEqual([...SPECIFIERS].sort());
  });

  it('passes publint with no errors or warnings', async () => {
    const out = await run(bin('publint'), ['run', tarball, '--strict'], work);
    expect(out).toContain('All good!');
  });

  it('passes arethetypeswrong for node16 (CJS and ESM) and bundler', async () => {
    // node10 resolution cannot see subpath exports at all, hence the node16 profile.
    await run(
      bin('attw'),
      [tarball, '--profile', 'node16', '--no-definitely-typed', '--format', 'ascii'],
      work,
    );
  });
});

/** The packages a fresh node process reaches when it runs `file` in `dir`. */
async function packagesReached(dir: string, file: string): Promise<string[]> {
  const reached = join(dir, `${file}.reached`);
  write(reached, '');
  await promisify(execFile)(process.execPath, ['--import', './register.mjs', file], {
    cwd: dir,
    env: { ...process.env, REACHED: reached },
  });
  const names = new Set(readFileSync(reached, 'utf8').split('\n').filter(Boolean));
  return [...names].sort();
}

/**
 * The time, in milliseconds, a fresh node process of the "app" consumer takes to import
 * `specifier` (its median over `runs` processes, each a cold start of the module graph).
 */
async function coldImports(
  specifier: string,
  runs: number,
): Promise<{ median: number; min: number }> {
  const script = `const start = performance.now();
await import(${JSON.stringify(specifier)});
process.stdout.write(String(performance.now() - start));`;
  write(join(work, 'app', 'cold-import.mjs'), script);
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    times.push(Number(await run(process.execPath, ['cold-import.mjs'], join(work, 'app'))));
  }
  times.sort((a, b) => a - b);
  const round = (ms: number) => Math.round(ms * 10) / 10;
  return { median: round(times[Math.floor(runs / 2)]!), min: round(times[0]!) };
}

describe('a consumer without express, koa, fastify or ioredis', () => {
  const dump = (load: string) => `
const specifiers = ${JSON.stringify(SPECIFIERS)};
const keys = {};
for (const specifier of specifiers) {
  try {
    keys[specifier] = Object.keys(${load}).sort();
  } catch (err) {
    keys[specifier] = [String(err.message).includes("'@nestjs/") ? 'needs @nestjs' : String(err)];
  }
}
console.log(JSON.stringify(keys));`;

  let esm: Record<string, string[]>;

  it('imports every subpath from ESM', async () => {
    write(join(work, 'app', 'esm.mjs'), dump('await import(specifier)'));
    esm = JSON.parse(await run(process.execPath, ['esm.mjs'], join(work, 'app')));
    for (const specifier of SPECIFIERS) {
      expect(esm[specifier], specifier).toEqual(expect.arrayContaining(EXPECTED[specifier]!));
    }
  });

  it('requires every subpath from CommonJS, with the same exports as ESM', async () => {
    write(join(work, 'app', 'cjs.cjs'), dump('require(specifier)'));
    const cjs = JSON.parse(await run(process.execPath, ['cjs.cjs'], join(work, 'app')));
    expect(cjs).toEqual(esm);
  });

  it('really lacks express, koa, fastify and ioredis', async () => {
    const probe = `for (const name of ['express', 'koa', 'fastify', 'ioredis']) {
  try { require.resolve(name); console.log(name); } catch {}
}`;
    write(join(work, 'app', 'probe.cjs'), probe);
    expect(await run(process.execPath, ['probe.cjs'], join(work, 'app'))).toBe('');
  });
});

describe('a NestJS consumer (Nest installed beside portico)', () => {
  it('loads portico/nest from CommonJS, as a `nest new` project does, and from ESM', async () => {
    const dir = join(work, 'typed');
    const list = 'console.log(Object.keys(nest).sort().join(","));';
    write(
      join(dir, 'nest.cjs'),
      `require('reflect-metadata');\nconst nest = require('portico/nest');\n${list}`,
    );
    write(
      join(dir, 'nest.mjs'),
      `import 'reflect-metadata';\nconst nest = await import('portico/nest');\n${list}`,
    );
    const cjs = await run(process.execPath, ['nest.cjs'], dir);
    expect(cjs).toContain('PorticoAuthGuard');
    expect(cjs).toContain('PorticoModule');
    expect(await run(process.execPath, ['nest.mjs'], dir)).toBe(cjs);
  });
});

describe('a TypeScript consumer', () => {
  const source = `import { createHub, toNodeListener } from 'portico';
import { sendError } from 'portico/core';
import { compose, type Middleware } from 'portico/core';
import { createRouter } from 'portico/http';
import { cors } from 'portico/cors';
import { rateLimit } from 'portico/rate-limit';
import { apiKeyAuth, jwtBearer, type Principal, type VerifiedJwt } from 'portico/auth';
import { createAuthorizationServer } from 'portico/oauth';
import { CloseCode } from 'portico/ws';
import { createEventStream } from 'portico/sse';
import { MemoryBroker } from 'portico/realtime';
import { createWebhookSender } from 'portico/webhook';
import { RedisBroker } from 'portico/redis';
import { toExpress } from 'portico/express';
import { toKoa } from 'portico/koa';
import { toFastify } from 'portico/fastify';
import { toFetchHandler } from 'portico/fetch';
import { toHono } from 'portico/hono';
import { PorticoModule, Scopes } from 'portico/nest';

const options: import('portico/webhook').WebhookSenderOptions = {};
const stack: Middleware[] = [cors({ origins: ['https://app.example.com'] }), rateLimit({ limit: 1 })];
// @ts-expect-error the typings are real, not any
rateLimit({ limit: 'one' });
// The JWT shapes are portico's own (jose's are ESM only), and typed.
const claims: NonNullable<Principal['claims']> = { sub: 'user-1', exp: 1_900_000_000, scope: 'a' };
// @ts-expect-error exp is a number
export const late: NonNullable<Principal['claims']> = { exp: 'later' };
export const alg = (jwt: VerifiedJwt): string => jwt.protectedHeader.alg + String(claims.exp);
export const used = [createHub, sendError, toNodeListener, compose, createRouter, apiKeyAuth,
  createAuthorizationServer, jwtBearer, CloseCode, createEventStream, MemoryBroker, createWebhookSender,
  RedisBroker, toExpress, toKoa, toFastify, toFetchHandler, toHono, PorticoModule, Scopes, options, stack];
`;
  const compile = async (name: string, type: 'module' | 'commonjs', options: object) => {
    const dir = join(work, 'typed', name);
    write(join(dir, 'package.json'), JSON.stringify({ type }));
    write(join(dir, 'index.ts'), source);
    const compilerOptions = { target: 'es2022', strict: true, noEmit: true, ...options };
    write(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['index.ts'] }));
    await run(bin('tsc'), ['-p', dir], dir, 120_000);
  };

  // Every variant runs at once, each checking portico's declarations (skipLibCheck: false):
  // ESM and CommonJS under node16 (where a CommonJS file may not import an ES module, so
  // portico's .d.cts must not name jose's types), nodenext, node20 (require of ES modules) and
  // bundler resolution.
  const variants: [string, 'module' | 'commonjs', object][] = [
    ['node16-esm', 'module', { module: 'node16', moduleResolution: 'node16' }],
    ['node16-cjs', 'commonjs', { module: 'node16', moduleResolution: 'node16' }],
    ['nodenext', 'module', { module: 'nodenext', moduleResolution: 'nodenext' }],
    ['node20-cjs', 'commonjs', { module: 'node20', moduleResolution: 'node16' }],
    ['bundler', 'module', { module: 'esnext', moduleResolution: 'bundler' }],
  ];
  for (const [name, type, options] of variants) {
    it.concurrent(`compiles as ${name} (${type} package)`, async () => {
      await compile(name, type, { ...options, skipLibCheck: false });
    }, 240_000);
  }
});
