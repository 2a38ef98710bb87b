// The system tools some suites need (redis-server, Chromium, openssl). Locally a missing tool
// skips those suites, said once on stderr; under CI (`CI` set, as .ci/run does) it fails the
// run instead, naming the tool: a green CI never hides suites that did not run.
import { spawnSync } from 'node:child_process';

/** Whether tests run under CI, where every tool must be there. */
export const underCi =
  process.env.CI !== undefined && process.env.CI !== '' && process.env.CI !== 'false';

/** Whether `command` runs (`command --version`-like `args` answer with status 0). */
export function runs(command: string, args: readonly string[]): boolean {
  return spawnSync(command, [...args], { stdio: 'ignore' }).status === 0;
}

/**
 * `available`, after saying what a missing tool skips; under CI a missing tool throws, so
 * that every suite needing it fails rather than skips.
 */
export function requireTool(name: string, available: boolean, install: string): boolean {
  if (available) return true;
  if (underCi) {
    throw new Error(
      `${name} is missing: CI runs every suite, so it must be installed (${install}).`,
    );
  }
  console.warn(
    `[portico tests] ${name} not found: the suites that need it are skipped (${install}).`,
  );
  return false;
}

/** Whether openssl runs (the suites that make certificates need it); see {@link requireTool}. */
export function requireOpenssl(): boolean {
  return requireTool('openssl', runs('openssl', ['version']), 'apt-get install openssl');
}
