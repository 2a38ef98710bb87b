/**
 * Checks the shape of the API site that `npm run docs` builds from typedoc.json, by converting
 * the project with TypeDoc's programmatic API (no rendering):
 *
 * - one module per package.json export, named as it is imported (`portico`, `portico/auth`, …),
 *   each with a module comment;
 * - every symbol has one page, in a subpath: the root `portico` module only holds references;
 * - every guide in docs/ is a project document (in the "Guides" group), README.md the index;
 * - and `npm run docs` itself (the same script and typedoc.json, its `treatWarningsAsErrors`
 *   included, only its output folder moved to a temporary one) exits 0 with no warning.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Application, LogLevel, type ProjectReflection, ReflectionKind } from 'typedoc';
import { beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** The specifiers users import: `.` is `portico`, `./auth` is `portico/auth`. */
function exportSpecifiers(): string[] {
  const pkg = JSON.parse(readFileSync(resolve(root, 'package.json'), 'utf8')) as {
    name: string;
    exports: Record<string, unknown>;
  };
  return Object.keys(pkg.exports)
    .filter((key) => key !== './package.json')
    .map((key) => (key === '.' ? pkg.name : `${pkg.name}/${key.slice(2)}`))
    .sort();
}

describe('the API site (typedoc.json)', () => {
  let project: ProjectReflection;

  beforeAll(async () => {
    const app = await Application.bootstrapWithPlugins({
      options: resolve(root, 'typedoc.json'),
      logLevel: LogLevel.Error,
    });
    const converted = await app.convert();
    if (!converted) throw new Error('TypeDoc could not convert the project');
    project = converted;
  }, 60_000);

  it('has one module per package.json export, named as users import it', () => {
    const modules = (project.children ?? []).filter((c) => c.kindOf(ReflectionKind.Module));
    expect(modules.map((m) => m.name).sort()).toEqual(exportSpecifiers());
    const uncommented = modules.filter((m) => !m.comment?.summary.length).map((m) => m.name);
    expect(uncommented, 'modules without a module comment').toEqual([]);
  });

  it('documents each symbol once, in its subpath: the root only lists references', () => {
    const rootModule = project.children?.find((c) => c.name === 'portico');
    const own = (rootModule?.children ?? []).filter((c) => !c.isReference()).map((c) => c.name);
    expect(own, 'declarations documented on the root page instead of a subpath').toEqual([]);
    expect(rootModule?.children?.length).toBeGreaterThan(0);
  });

  it('renders every guide in docs/ as a document in the "Guides" group', () => {
    const guides = readdirSync(resolve(root, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => f.replace(/\.md$/, ''))
      .sort();
    const documents = (project.documents ?? []).map((d) => d.name);
    expect([...documents].sort()).toEqual(guides);
    expect(documents[0]).toBe('getting-started');
    const group = project.groups?.find((g) => g.title === 'Guides');
    expect(group?.children.map((c) => c.name)).toEqual(documents);
    expect(project.readme?.length, 'README.md as the index page').toBeGreaterThan(0);
  });

  it('copies the example files the guides link to under their repository path', () => {
    type FileId = Parameters<ProjectReflection['files']['getName']>[0];
    const files = project.files as unknown as { mediaToPath: Map<FileId, string> };
    const names = [...files.mediaToPath]
      .filter(([, path]) => path.includes('/examples/'))
      .map(([id]) => project.files.getName(id));
    expect(names.length).toBeGreaterThan(0);
    expect(
      names.filter((name) => !/^(examples-[\w-]+\.ts|SECURITY\.md)$/.test(name ?? '')),
    ).toEqual([]);
  });
});

describe('npm run docs', () => {
  it('builds the API site as a user runs it: exit 0, no warning, an index page', async () => {
    const out = mkdtempSync(join(tmpdir(), 'portico-api-'));
    try {
      const result = await new Promise<{ code: number | null; output: string }>((done) => {
        execFile(
          'npm',
          ['run', '--silent', 'docs', '--', '--out', out],
          { cwd: root, timeout: 240_000, env: { ...process.env, NO_COLOR: '1' } },
          (error, stdout, stderr) =>
            done({
              code: error ? ((error as { code?: number }).code ?? 1) : 0,
              output: stdout + stderr,
            }),
        );
      });
      expect(result.output).not.toMatch(/\[warning\]|\[error\]/);
      expect(result.code, result.output).toBe(0);
      expect(existsSync(join(out, 'index.html'))).toBe(true);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  }, 300_000);
});
