// Under CI a suite never skips for a missing tool: loading the helper that needs it fails,
// naming the tool (the machine here has them all, so the tests hide one: a PATH without
// redis-server, a CHROMIUM_PATH that does not exist). Locally it skips, and says so.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));
/** A PATH with node and sh only: no redis-server, no redis-cli, no openssl. */
const bare = mkdtempSync(join(tmpdir(), 'portico-bare-path-'));
symlinkSync(process.execPath, join(bare, 'node'));
symlinkSync('/bin/sh', join(bare, 'sh'));

afterAll(() => rmSync(bare, { recursive: true, force: true }));

/** Loads `helper` in a fresh node, as a test file would: its exit status and stderr. */
function load(helper: string, env: Record<string, string | undefined>) {
  const result = spawnSync(
    process.execPath,
    [
      '--import',
      'tsx',
      '--input-type=module',
      '-e',
      `await import(${JSON.stringify(join(root, helper))});`,
    ],
    {
      cwd: root,
      encoding: 'utf8',
      env: { ...process.env, CI: undefined, ...env },
      timeout: 20_000,
    },
  );
  return { status: result.status, stderr: result.stderr };
}

describe('a missing tool', () => {
  it('fails the run under CI, naming redis-server', () => {
    const { status, stderr } = load('test/helpers/redis.ts', { CI: '1', PATH: bare });
    expect(status).not.toBe(0);
    expect(stderr).toContain('redis-server is missing: CI runs every suite');
  });

  it('fails the run under CI, naming Chromium', () => {
    const { status, stderr } = load('test/helpers/chromium.ts', {
      CI: 'true',
      CHROMIUM_PATH: '/nonexistent/chromium',
    });
    expect(status).not.toBe(0);
    expect(stderr).toContain('Chromium (/nonexistent/chromium) is missing');
  });

  it('only skips, and says so, outside CI', () => {
    const { status, stderr } = load('test/helpers/redis.ts', { PATH: bare });
    expect(status).toBe(0);
    expect(stderr).toContain('redis-server not found: the suites that need it are skipped');
  });

  it('is not missing when installed, under CI too', () => {
    expect(load('test/helpers/redis.ts', { CI: '1' }).status).toBe(0);
  });
});
