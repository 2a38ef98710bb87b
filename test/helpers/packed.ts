// The package as users install it: a copy of the project as a clone has it, built and packed,
// then unpacked into throwaway consumer projects whose node_modules hold portico as a real
// folder and, linked from the repository, only the packages each consumer names.
import { execFile } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

export const root = fileURLToPath(new URL('../..', import.meta.url));
export const bin = (name: string) => join(root, 'node_modules', '.bin', name);

/** Runs a command; a failure carries its whole output. */
export async function run(
  cmd: string,
  args: string[],
  cwd: string,
  timeout = 60_000,
): Promise<string> {
  try {
    const { stdout } = await promisify(execFile)(cmd, args, {
      cwd,
      timeout,
      maxBuffer: 64 * 1024 * 1024,
      env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' },
    });
    return stdout;
  } catch (error) {
    const {
      stdout = '',
      stderr = '',
      message,
    } = error as Error & { stdout?: string; stderr?: string };
    throw new Error(`${cmd} ${args.join(' ')} failed in ${cwd}\n${message}\n${stdout}\n${stderr}`);
  }
}

/** Writes `text` to `file`, making its folder. */
export const write = (file: string, text: string) => {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text);
};

const dependencies = (dir: string): string[] => {
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  return Object.keys({ ...pkg.dependencies, ...pkg.optionalDependencies });
};

/**
 * Links into `modules` the packages `names` and everything they need, found as node finds
 * them from the repository (nested copies come along inside their parent's folder).
 */
export function linkClosure(names: string[], modules: string): void {
  const seen = new Set<string>();
  const visit = (name: string, from: string) => {
    for (let dir = from; dir.startsWith(root); dir = dirname(dir)) {
      const candidate = join(dir, 'node_modules', name);
      if (existsSync(join(candidate, 'package.json'))) {
        if (seen.has(candidate)) return;
        seen.add(candidate);
        if (dir === root && !existsSync(join(modules, name))) {
          mkdirSync(dirname(join(modules, name)), { recursive: true });
          symlinkSync(candidate, join(modules, name), 'dir');
        }
        for (const dep of dependencies(candidate)) visit(dep, candidate);
        return;
      }
    } // not found: a missing optional one
  };
  for (const name of names) visit(name, root);
}

/** The packed tarball of the project, in a fresh working folder. */
export interface Packed {
  /** The working folder (remove it when done). */
  work: string;
  tarball: string;
  files: { path: string; size: number }[];
  unpackedSize: number;
}

/** Copies the project as a clone has it into a fresh folder, builds it and packs it. */
export async function pack(prefix = 'portico-package-'): Promise<Packed> {
  const work = mkdtempSync(join(tmpdir(), prefix));
  const stage = join(work, 'stage');
  const listed = await run('git', ['ls-files', '-z', '-co', '--exclude-standard'], root);
  for (const file of listed.split('\0')) {
    if (file && existsSync(join(root, file))) {
      mkdirSync(dirname(join(stage, file)), { recursive: true });
      copyFileSync(join(root, file), join(stage, file));
    }
  }
  symlinkSync(join(root, 'node_modules'), join(stage, 'node_modules'), 'dir');
  await run('npm', ['run', 'build'], stage, 120_000);
  // No prepack script runs (the build above stands for it); --ignore-scripts keeps any
  // lifecycle output out of the JSON.
  const [report] = JSON.parse(
    await run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', work], stage),
  ) as { filename: string; unpackedSize: number; files: { path: string; size: number }[] }[];
  return {
    work,
    tarball: join(work, report!.filename),
    files: report!.files,
    unpackedSize: report!.unpackedSize,
  };
}

/**
 * Makes the consumer project `dir`: the tarball unpacked as `node_modules/portico`, portico's
 * dependencies and `extra` linked beside it. Returns portico's package.json.
 */
export async function installConsumer(
  tarball: string,
  dir: string,
  extra: readonly string[] = [],
): Promise<{ dependencies: Record<string, string>; exports: Record<string, unknown> }> {
  const modules = join(dir, 'node_modules');
  mkdirSync(modules, { recursive: true });
  await run('tar', ['-xzf', tarball, '-C', modules], dir);
  renameSync(join(modules, 'package'), join(modules, 'portico'));
  const pkg = JSON.parse(readFileSync(join(modules, 'portico', 'package.json'), 'utf8'));
  linkClosure([...Object.keys(pkg.dependencies), ...extra], modules);
  return pkg;
}
