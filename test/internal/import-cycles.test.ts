/**
 * No import cycles in `src/`: every file's relative imports (`import … from`, `export … from`,
 * `import type` included, side-effect and dynamic `import()`) are walked, and the graph must
 * have no cycle, between files or between the folders of `src/` (the concerns). The two
 * lowest layers are checked apart: `internal/` imports nothing else of `src/`, and `core/`
 * nothing but `internal/`.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const src = fileURLToPath(new URL('../../src/', import.meta.url));

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

const SPECIFIER =
  /(?:^|[\s;])(?:import|export)\s(?:[^'";]*?\sfrom\s)?\s*['"](\.[^'"]+)['"]|import\(\s*['"](\.[^'"]+)['"]\s*\)/g;

/** The `src/` files `file` imports, as paths relative to `src/`. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const found = new Set<string>();
  for (const match of text.matchAll(SPECIFIER)) {
    const specifier = (match[1] ?? match[2])!;
    const target = resolve(dirname(file), specifier.replace(/\.js$/, '.ts'));
    found.add(relative(src, target));
  }
  return [...found];
}

const graph = new Map<string, string[]>(
  sourceFiles(src).map((file) => [relative(src, file), importsOf(file)]),
);

/** The folder of `src/` a file belongs to (`''` for `src/index.ts`). */
const concern = (path: string) => (path.includes('/') ? path.slice(0, path.indexOf('/')) : '');

/** Every cycle reachable in `edges`, each as the list of its nodes, first repeated last. */
function cycles(edges: ReadonlyMap<string, readonly string[]>): string[][] {
  const found: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (node: string) => {
    state.set(node, 'open');
    stack.push(node);
    for (const next of edges.get(node) ?? []) {
      if (!edges.has(next)) continue;
      if (state.get(next) === 'open') found.push([...stack.slice(stack.indexOf(next)), next]);
      else if (state.get(next) === undefined) visit(next);
    }
    stack.pop();
    state.set(node, 'done');
  };
  for (const node of edges.keys()) if (state.get(node) === undefined) visit(node);
  return found;
}

describe('imports in src/', () => {
  it('resolve to files that exist', () => {
    const missing = [...graph].flatMap(([file, imports]) =>
      imports.filter((target) => !graph.has(target)).map((target) => `${file} → ${target}`),
    );
    expect(missing).toEqual([]);
  });

  it('form no cycle between files', () => {
    expect(cycles(graph).map((cycle) => cycle.join(' → '))).toEqual([]);
  });

  it('form no cycle between the folders of src/', () => {
    const folders = new Map<string, Set<string>>();
    for (const [file, imports] of graph) {
      const from = concern(file);
      if (from === '') continue;
      const targets = folders.get(from) ?? new Set<string>();
      for (const target of imports) if (concern(target) !== from) targets.add(concern(target));
      folders.set(from, targets);
    }
    const edges = new Map([...folders].map(([from, targets]) => [from, [...targets]]));
    expect(cycles(edges).map((cycle) => cycle.join(' → '))).toEqual([]);
  });

  it('form no cycle between the folders inside a folder, at every depth (its layers)', () => {
    // inside a folder, each entry (a sub-folder, or a file beside them) is a unit; imports
    // between units must run one way, so that the sub-folders read as layers
    const wrong: string[] = [];
    const parents = new Set(
      [...graph.keys()].map((file) => dirname(file)).filter((d) => d !== '.'),
    );
    for (const parent of parents) {
      const unit = (path: string) =>
        path.startsWith(`${parent}/`) ? path.slice(parent.length + 1).split('/')[0]! : undefined;
      const edges = new Map<string, Set<string>>();
      for (const [file, imports] of graph) {
        const from = unit(file);
        if (from === undefined) continue;
        const targets = edges.get(from) ?? new Set<string>();
        for (const target of imports) {
          const to = unit(target);
          if (to !== undefined && to !== from) targets.add(to);
        }
        edges.set(from, targets);
      }
      const hasSubfolder = [...edges.keys()].some((name) => !name.endsWith('.ts'));
      if (!hasSubfolder) continue;
      const found = cycles(new Map([...edges].map(([from, targets]) => [from, [...targets]])));
      wrong.push(...found.map((cycle) => `${parent}: ${cycle.join(' → ')}`));
    }
    expect(wrong).toEqual([]);
  });

  it('keep every folder to about 15 files side by side', () => {
    const counts = new Map<string, number>();
    for (const file of graph.keys())
      counts.set(dirname(file), (counts.get(dirname(file)) ?? 0) + 1);
    const crowded = [...counts]
      .filter(([, count]) => count > 16)
      .map(([dir, count]) => `${dir}: ${count}`);
    expect(crowded).toEqual([]);
  });

  it('keep internal/ at the bottom and core/ just above it', () => {
    const allowed: Record<string, readonly string[]> = {
      internal: ['internal'],
      core: ['core', 'internal'],
    };
    const wrong = [...graph].flatMap(([file, imports]) => {
      const layer = allowed[concern(file)];
      if (layer === undefined) return [];
      return imports
        .filter((target) => !layer.includes(concern(target)))
        .map((target) => `${file} → ${target}`);
    });
    expect(wrong).toEqual([]);
  });

  it('sees the imports it checks', () => {
    // the walk finds every form: a type import, a re-export, a value import
    expect(graph.get('auth/index.ts')).toContain('core/principal.ts');
    expect(graph.get('http/routing/router.ts')).toEqual(
      expect.arrayContaining([
        'core/compose.ts',
        'http/routing/methods.ts',
        'http/routing/route-table.ts',
      ]),
    );
    expect(graph.size).toBeGreaterThan(100);
    // and the search finds a cycle when there is one
    const synthetic = new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a', 'd']],
      ['d', []],
    ]);
    expect(cycles(synthetic)).toEqual([['a', 'b', 'c', 'a']]);
  });
});
