// The recipes of docs/providers.md, run from this repository's source against the local
// stand-ins of their identity providers: each block as written (only `portico` resolved to
// src/), with the stand-in's address in its environment, then the curl lines after it, whose
// answers (the principal: sub, scopes, roles) must be the ones the page shows. The docs test
// runs the same blocks again against the packed package.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Block, blocksOf, curlChecks, isCode, isShell, unmet } from '../docs/blocks.js';
import { root, write } from '../helpers/packed.js';
import { isProvider, type ProviderName, RECIPES, startStandIn } from './providers/stand-ins.js';

const DOC = 'docs/providers.md';
const HOOK = fileURLToPath(new URL('../docs/listen-hook.mjs', import.meta.url));
const blocks = blocksOf(root, DOC);

interface Recipe {
  block: Block;
  provider: ProviderName;
  curls: ReturnType<typeof curlChecks>['checks'];
}

/** Each stand-in block with the curl checks of the shell blocks right after it. */
function recipes(): Recipe[] {
  const found: Recipe[] = [];
  let current: Recipe | undefined;
  for (const block of blocks) {
    if (isCode(block)) {
      const provider = block.standIn;
      current =
        provider !== undefined && isProvider(provider) ? { block, provider, curls: [] } : undefined;
      if (current) found.push(current);
    } else if (isShell(block)) {
      current?.curls.push(...curlChecks(block).checks);
    }
  }
  return found;
}

let project: string;
beforeAll(() => {
  // a project whose `portico` is src/ (tsconfig paths, as tsx reads them)
  project = mkdtempSync(join(tmpdir(), 'portico-providers-'));
  symlinkSync(join(root, 'node_modules'), join(project, 'node_modules'), 'dir');
  write(join(project, 'package.json'), JSON.stringify({ type: 'module' }));
  const src = (path: string) => [join(root, 'src', path)];
  write(
    join(project, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        allowImportingTsExtensions: true,
        paths: {
          portico: src('index.ts'),
          'portico/express': src('adapters/express.ts'),
          'portico/node': src('adapters/node.ts'),
          'portico/*': src('*/index.ts'),
        },
      },
    }),
  );
});
afterAll(() => {
  if (project) rmSync(project, { recursive: true, force: true });
});

interface Started {
  child: ChildProcess;
  output: string[];
  port: number;
}

/** Runs a block with `env`, resolving once its server listens (on a free port, not 3000). */
async function run(block: Block, env: Record<string, string>): Promise<Started> {
  const file = join(project, block.file);
  const report = `${file}.ports`;
  write(file, block.code);
  const { PORT: _, NODE_OPTIONS: __, ...inherited } = process.env;
  const child = spawn(process.execPath, ['--import', 'tsx', '--import', HOOK, file], {
    cwd: project,
    env: { ...inherited, ...env, PORTICO_DOCS_PORTS: report },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  child.stdout!.on('data', (chunk) => output.push(String(chunk)));
  child.stderr!.on('data', (chunk) => output.push(String(chunk)));
  for (const deadline = Date.now() + 20_000; Date.now() < deadline; await sleep(50)) {
    if (child.exitCode !== null) break;
    if (!existsSync(report)) continue;
    const line = readFileSync(report, 'utf8').split('\n').find(Boolean);
    if (line) return { child, output, port: (JSON.parse(line) as { port: number }).port };
  }
  child.kill('SIGKILL');
  throw new Error(`${DOC}:${block.line} did not listen\n${output.join('')}`);
}

function curl(command: string, port: number, env: Record<string, string>) {
  const rewritten = command
    .replace(/^curl\s/, 'curl -sS --max-time 5 ')
    .replace(/127\.0\.0\.1:3000/g, `127.0.0.1:${port}`);
  return new Promise<string>((resolve, reject) => {
    execFile(
      'sh',
      ['-c', rewritten],
      { env: { ...process.env, ...env } },
      (error, stdout, stderr) =>
        error ? reject(new Error(`${command}\n${stderr}`)) : resolve(stdout),
    );
  });
}

describe(`${DOC}: every recipe, against its provider's stand-in`, () => {
  const list = recipes();

  it('has a recipe, with curl lines, for each provider', () => {
    expect(list.map((r) => r.provider).sort()).toEqual(Object.keys(RECIPES).sort());
    for (const { block, curls } of list)
      expect(curls.length, `${DOC}:${block.line}`).toBeGreaterThan(1);
  });

  for (const { block, provider, curls } of list) {
    it(`${provider} (${DOC}:${block.line}) answers as the page says`, async () => {
      const standIn = await startStandIn(provider);
      let started: Started | undefined;
      try {
        started = await run(block, standIn.env);
        for (const { command, expected } of curls) {
          const out = await curl(command, started.port, standIn.env);
          expect(unmet(expected, out), `${DOC}:${block.line}\n$ ${command}\n${out}`).toEqual([]);
        }
        // only the provider's own paths were asked for, and no tenant that is not listed
        expect(standIn.requests.length).toBeGreaterThan(0);
        expect(standIn.requests.filter((p) => p.includes(RECIPES.entra.stranger))).toEqual([]);
      } finally {
        started?.child.kill('SIGTERM');
        await standIn.close();
      }
    }, 40_000);
  }
});
