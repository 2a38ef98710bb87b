// The code samples of the guides in docs/ are cut from the tested examples: a sample marked
// `<!-- snippet: examples/a.ts examples/b.ts -->` right before its ```ts block must be a run
// of lines of each file named (shifted right by the same indentation).
import { readFileSync } from 'node:fs';

const root = new URL('../../', import.meta.url);
const sources = new Map<string, string[]>();

function linesOf(file: string): string[] {
  let lines = sources.get(file);
  if (lines === undefined) {
    lines = readFileSync(new URL(file, root), 'utf8').split('\n');
    sources.set(file, lines);
  }
  return lines;
}

const indentOf = (line: string) => line.length - line.trimStart().length;

/** Whether `snippet` is a run of lines of `file`, shifted right by the same indentation. */
function contains(file: string, snippet: readonly string[]): boolean {
  const lines = linesOf(file);
  for (let start = 0; start + snippet.length <= lines.length; start++) {
    const shift = indentOf(lines[start]!) - indentOf(snippet[0]!);
    if (shift < 0) continue;
    const pad = ' '.repeat(shift);
    if (snippet.every((line, i) => lines[start + i] === (line === '' ? '' : pad + line))) {
      return true;
    }
  }
  return false;
}

/** A marked sample of a guide, and the example files it must be cut from. */
export interface Snippet {
  files: string[];
  code: string;
}

/** Every marked sample of `guide` (a path from the repository root, e.g. `docs/oauth.md`). */
export function snippetsOf(guide: string): Snippet[] {
  const text = readFileSync(new URL(guide, root), 'utf8');
  return [...text.matchAll(/<!-- snippet: ([^>]+?) -->\n+```ts\n([\s\S]*?)\n```/g)].map(
    ([, files, code]) => ({ files: files!.split(' '), code: code! }),
  );
}

/** The samples of `guide` that are not found in a file they name, as readable messages. */
export function strayedSnippets(guide: string): string[] {
  return snippetsOf(guide).flatMap(({ files, code }) =>
    files
      .filter((file) => !contains(file, code.split('\n')))
      .map((file) => `${file} does not hold:\n${code}`),
  );
}
