// examples/nest as a NestJS user builds and runs it: a CommonJS project (`nest new`'s layout)
// with the packed package installed, compiled by tsc (legacy decorators and their metadata),
// started with node, then called over real sockets.
import type { ChildProcess } from 'node:child_process';
import { cpSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, json, request } from '../helpers/http.js';
import { bin, installConsumer, pack, root, run } from '../helpers/packed.js';
import { freePort, spawnReady } from '../helpers/process.js';

const KEY = 'demo-nest-key-0123456789abcdef'; // examples/nest/src/keys.ts
let work: string | undefined;
let child: ChildProcess | undefined;
let port: number;

beforeAll(async () => {
  const packed = await pack('portico-nest-');
  work = packed.work;
  const app = join(work, 'app');
  cpSync(join(root, 'examples/nest'), app, { recursive: true });
  await installConsumer(packed.tarball, app, [
    '@nestjs/common',
    '@nestjs/core',
    '@nestjs/platform-express',
    'reflect-metadata',
    'rxjs',
    '@types/node',
  ]);
  await run(bin('tsc'), ['-p', 'tsconfig.json'], app, 120_000);
  port = await freePort();
  child = await spawnReady(
    ['dist/main.js'],
    { cwd: app, env: { ...process.env, PORT: String(port) } },
    'NestJS example on',
    20_000,
  );
}, 240_000);

afterAll(() => {
  child?.kill('SIGTERM');
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('examples/nest, compiled to CommonJS and started with node', () => {
  const withKey = { headers: { 'x-api-key': KEY } };

  it('puts the key owner at req.user, with portico headers on Nest answers', async () => {
    const me = await request(port, '/api/me', withKey);
    expect(me.status).toBe(200);
    expect(json(me)).toEqual({ sub: 'demo', scopes: ['read:messages'] });
    expect(me.headers['x-content-type-options']).toBe('nosniff');
    expect(me.headers['x-powered-by']).toBeUndefined();
  });

  it('answers no key with a 401 problem, a missing role with 403, a Nest 404 as a problem', async () => {
    expectProblem(await request(port, '/api/me'), 401);
    expect((await request(port, '/api/messages', withKey)).status).toBe(200);
    const missing = await request(port, '/api/messages/42', withKey);
    expectProblem(missing, 404);
    expect(json<{ detail: string }>(missing).detail).toBe('No message 42.');
    const post = await request(port, '/api/messages', {
      method: 'POST',
      headers: { ...withKey.headers, 'content-type': 'application/json' },
      body: '{"text":"hi"}',
    });
    expectProblem(post, 403);
    const nowhere = await request(port, '/nowhere?api_key=in-the-query');
    expectProblem(nowhere, 404);
    expect(nowhere.body).not.toContain('in-the-query');
  });
});
