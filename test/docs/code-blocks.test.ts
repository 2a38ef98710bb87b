// Every code block of README.md and docs/*.md, as a reader would paste it into a fresh project
// that installed the packed package: type-checked (one tsc run over all of them, strict,
// nodenext), then run, and each curl command of the shell blocks after a server checked
// against what the text says it prints. The marks are described in ./blocks.ts.
//
// PORTICO_DOCS=docs/oauth.md,README.md checks only those documents; PORTICO_DOCS_DIST=local
// uses the repository's own dist/ (run `npm run build` first) instead of building and packing.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isProvider, type StandIn, startStandIn } from '../auth/providers/stand-ins.js';
import { bin, installConsumer, linkClosure, pack, root, write } from '../helpers/packed.js';
import { type Block, blocksOf, curlChecks, isCode, isShell, unmet } from './blocks.js';

const DOCS = (
  process.env.PORTICO_DOCS?.split(',') ?? [
    'README.md',
    ...readdirSync(join(root, 'docs'))
      .filter((name) => name.endsWith('.md') && name !== 'exports.md')
      .map((name) => `docs/${name}`),
  ]
).sort();
const HOOK = fileURLToPath(new URL('./listen-hook.mjs', import.meta.url));
const START_MS = 20_000;

const blocks = new Map(DOCS.map((doc) => [doc, blocksOf(root, doc)]));
const checked = (block: Block) => isCode(block) && block.check !== 'fragment';
const folderOf = (doc: string) => doc.replace(/\.md$/, '').replace(/\W+/g, '-');

/** The bare package names the checked blocks import, and their @types where there are some. */
function importedPackages(): string[] {
  const names = new Set<string>(['tsx', '@types/node']);
  for (const block of [...blocks.values()].flat().filter(checked)) {
    for (const [, specifier] of block.code.matchAll(
      /(?:from|import|require\()\s*'([^'.][^']*)'/g,
    )) {
      if (specifier!.startsWith('node:') || specifier!.startsWith('portico')) continue;
      const parts = specifier!.split('/');
      const name = specifier!.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
      names.add(name);
      if (!name.startsWith('@')) names.add(`@types/${name}`);
    }
  }
  return [...names];
}

let work: string;
let consumer: string;
/** The same project, with express@4 as its `express`. */
let express4: string;
const typeErrors = new Map<string, string[]>();

beforeAll(async () => {
  if (process.env.PORTICO_DOCS_DIST === 'local') {
    work = mkdtempSync(join(tmpdir(), 'portico-docs-'));
    consumer = join(work, 'consumer');
    write(join(consumer, 'node_modules', '.keep'), '');
    linkClosure(importedPackages(), join(consumer, 'node_modules'));
    symlinkSync(root, join(consumer, 'node_modules', 'portico'), 'dir');
  } else {
    const packed = await pack('portico-docs-');
    work = packed.work;
    consumer = join(work, 'consumer');
    await installConsumer(packed.tarball, consumer, importedPackages());
  }
  write(join(consumer, 'package.json'), JSON.stringify({ name: 'docs', type: 'module' }));
  const files: string[] = [];
  for (const block of [...blocks.values()].flat().filter(checked)) {
    const file = `${folderOf(block.doc)}/${block.file}`;
    write(join(consumer, file), block.code);
    files.push(file);
  }
  express4 = join(work, 'express4');
  write(join(express4, 'node_modules', '.keep'), '');
  for (const name of readdirSync(join(consumer, 'node_modules'))) {
    if (name.startsWith('.')) continue;
    const target =
      name === 'express'
        ? join(root, 'node_modules', 'express4')
        : join(consumer, 'node_modules', name);
    symlinkSync(target, join(express4, 'node_modules', name), 'dir');
  }
  write(join(express4, 'package.json'), JSON.stringify({ name: 'docs', type: 'module' }));
  for (const file of files) write(join(express4, file), readFileSync(join(consumer, file), 'utf8'));
  const compilerOptions = {
    target: 'es2022',
    module: 'nodenext',
    moduleResolution: 'nodenext',
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    allowJs: true,
    checkJs: false,
    moduleDetection: 'force',
    types: ['node'],
    // as a Nest project has it (`nest new`): the NestJS blocks use its decorators
    experimentalDecorators: true,
  };
  // A syntax error anywhere makes tsc report syntax errors only: the files that have one
  // are left out of a second run, which then reports the type errors of all the others.
  for (let round = 0; round < 2; round++) {
    const included = files.filter((file) => !typeErrors.has(file));
    write(join(consumer, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: included }));
    const output = await new Promise<string>((resolve) => {
      execFile(bin('tsc'), ['-p', '.', '--pretty', 'false'], { cwd: consumer }, (_, stdout) =>
        resolve(stdout),
      );
    });
    let syntax = false;
    for (const line of output.split('\n')) {
      const match = /^(.+?)\((\d+),\d+\): (error TS(\d+).*)$/.exec(line);
      if (!match) continue;
      const list = typeErrors.get(match[1]!) ?? [];
      list.push(`line ${match[2]}: ${match[3]}`);
      typeErrors.set(match[1]!, list);
      if (match[4]!.startsWith('1')) syntax = true;
    }
    if (!syntax) break;
  }
}, 240_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

/** A block started by the test: its process, output and the ports its servers listen on. */
interface Running {
  child: ChildProcess;
  output: string[];
  ports: Map<number, number>;
  exit: Promise<number | null>;
  /** The variables of the block's identity provider stand-in (`<!-- stand-in: … -->`). */
  standIn: Record<string, string>;
}

async function start(
  block: Block,
  base: string,
  standIn: Record<string, string> = {},
): Promise<Running & { listening: boolean; code?: number | null }> {
  const dir = join(base, folderOf(block.doc));
  const report = join(dir, `${block.file}.ports`);
  rmSync(report, { force: true });
  const loader = block.file.endsWith('.ts') ? ['--import', 'tsx'] : [];
  const { PORT: _, NODE_OPTIONS: __, ...env } = process.env;
  const child = spawn(process.execPath, [...loader, '--import', HOOK, block.file], {
    cwd: dir,
    env: { ...env, ...standIn, PORTICO_DOCS_PORTS: report },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  child.stdout!.on('data', (chunk) => output.push(String(chunk)));
  child.stderr!.on('data', (chunk) => output.push(String(chunk)));
  let code: number | null | undefined;
  const exit = new Promise<number | null>((resolve) => {
    child.on('exit', (status) => {
      code = status;
      resolve(status);
    });
  });
  const ports = new Map<number, number>();
  const read = () => {
    if (!existsSync(report)) return 0;
    const lines = readFileSync(report, 'utf8').trim().split('\n').filter(Boolean);
    for (const line of lines) {
      const { named, port } = JSON.parse(line) as { named: number; port: number };
      if (!ports.has(named)) ports.set(named, port);
    }
    return lines.length;
  };
  const deadline = Date.now() + START_MS;
  let seen = 0;
  let quietSince = Date.now();
  while (Date.now() < deadline && code === undefined) {
    await sleep(50);
    const now = read();
    if (now !== seen) {
      seen = now;
      quietSince = Date.now();
    } else if (seen > 0 && Date.now() - quietSince > 300) break;
  }
  await sleep(0);
  return { child, output, ports, exit, standIn, listening: seen > 0 && code === undefined, code };
}

async function stop(running: Running | undefined): Promise<void> {
  if (!running || running.child.exitCode !== null || running.child.signalCode !== null) return;
  running.child.kill('SIGTERM');
  const killed = await Promise.race([running.exit.then(() => true), sleep(3000).then(() => false)]);
  if (!killed) running.child.kill('SIGKILL');
  await running.exit;
}

/** Runs one curl command of a shell block against the running block's servers. */
function curl(command: string, ports: Map<number, number>, env: Record<string, string>) {
  const rewritten = command
    .replace(/^curl\s/, 'curl -sS --max-time 5 ')
    .replace(/(localhost|127\.0\.0\.1|\[::1\]):(\d+)/g, (whole, _host, named) => {
      const port = ports.get(Number(named));
      return port === undefined ? whole : `127.0.0.1:${port}`;
    });
  // the URL curl requests (the first argument that is one) must be a server of the blocks
  const target = /\s'?"?(?:https?|wss?):\/\/(localhost|127\.0\.0\.1|\[::1\]):(\d+)/.exec(command);
  if (target && !ports.has(Number(target[2]))) {
    return Promise.resolve({
      code: -1,
      out: `${target[1]}:${target[2]} is served by no block above`,
    });
  }
  return new Promise<{ code: number; out: string }>((resolve) => {
    execFile(
      'sh',
      ['-c', rewritten],
      { env: { ...process.env, ...env } },
      (error, stdout, stderr) => {
        const code = error ? Number((error as { code?: number }).code ?? 1) : 0;
        resolve({ code, out: `${stdout}${stderr ? `\n${stderr}` : ''}` });
      },
    );
  });
}

/** `export NAME=value` lines a running block printed (a key it made, say). */
const printedExports = (running: Running | undefined, lines: string[]) => {
  const env: Record<string, string> = { ...running?.standIn };
  for (const line of [...(running?.output.join('').split('\n') ?? []), ...lines]) {
    const match = /^export (\w+)=['"]?([^'"\s]+)['"]?$/.exec(line.trim());
    if (match) env[match[1]!] = match[2]!;
  }
  return env;
};

const usesExpress = (block: Block) => /from 'express'/.test(block.code);

/**
 * The checks of `doc`'s blocks, in order, run in `base()`'s project; `only` picks the code
 * blocks to run (the shell blocks after a picked one are checked, the others left out).
 */
function describeDoc(
  title: string,
  doc: string,
  base: () => string,
  only: (block: Block) => boolean = () => true,
) {
  describe(title, () => {
    let running: (Running & { listening: boolean; code?: number | null }) | undefined;
    let provider: StandIn | undefined;
    let picked = true;
    afterAll(async () => {
      await stop(running);
      await provider?.close();
    });

    for (const block of blocks.get(doc)!) {
      const where = `${doc}:${block.line}`;
      if (checked(block) && block.check === 'run') {
        picked = only(block);
        if (!picked) continue;
        it(
          `${where} runs`,
          async () => {
            await stop(running);
            await provider?.close();
            provider = undefined;
            if (block.standIn !== undefined) {
              expect(isProvider(block.standIn), `${where}: no stand-in ${block.standIn}`).toBe(
                true,
              );
              provider = await startStandIn(block.standIn as Parameters<typeof startStandIn>[0]);
            }
            running = await start(block, base(), provider?.env);
            const output = () => `${where}\n${running!.output.join('')}`;
            if (running.listening) return;
            expect(
              running.code,
              `${output()}\n(it neither listened nor exited)`,
            ).not.toBeUndefined();
            expect(running.code, output()).toBe(0);
          },
          START_MS + 10_000,
        );
      }
      if (isShell(block) && block.check !== 'skip' && picked) {
        const { exports, checks } = curlChecks(block);
        if (checks.length === 0) continue;
        it(`${where} answers as the text says`, async () => {
          expect(running?.listening, `${where}: no server runs from a block above`).toBe(true);
          const env = printedExports(running, exports);
          for (const { command, expected } of checks) {
            const { code, out } = await curl(command, running!.ports, env);
            const failed = code !== 0 && !(code === 28 && out.trim() !== '');
            expect(
              failed ? [`curl exited ${code}`] : unmet(expected, out),
              `${where}\n$ ${command}\n${out}`,
            ).toEqual([]);
          }
        }, 60_000);
      }
    }
  });
}

for (const doc of DOCS) {
  describe(`${doc} type-checks`, () => {
    for (const block of blocks.get(doc)!.filter(checked)) {
      const where = `${doc}:${block.line}`;
      it(`${where} type-checks`, () => {
        const file = `${folderOf(doc)}/${block.file}`;
        expect(typeErrors.get(file) ?? [], `${where}\n${block.code}`).toEqual([]);
      });
    }
  });
  const runs = blocks.get(doc)!.some((block) => checked(block) && block.check === 'run');
  if (runs) describeDoc(doc, doc, () => consumer);
  // Express 4 is supported as well as 5: its blocks run again with express@4 as `express`
  if (blocks.get(doc)!.some((block) => checked(block) && usesExpress(block))) {
    describeDoc(`${doc} on Express 4`, doc, () => express4, usesExpress);
  }
}
