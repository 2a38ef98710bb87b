// The code blocks of README.md and docs/*.md, as the docs test checks them.
//
// A block is marked by HTML comments on the lines right before its fence (blank lines
// between are allowed):
//   <!-- check: fragment -->  a deliberate fragment: neither type-checked nor run
//   <!-- check: types -->     type-checked, not run (it needs what a test machine lacks)
//   <!-- check: skip -->      a shell block whose curl commands are not run
//   <!-- file: name.ts -->    the block's file name, so that a later block may import it; the
//                             paragraph before the marks must show it too (`name.ts`, in
//                             backticks), since a rendered page hides the comment
//   <!-- stand-in: auth0 -->  the block runs against the local stand-in of that identity
//                             provider (test/auth/providers/stand-ins.ts): the block and the
//                             curl lines after it get the stand-in's variables (its address,
//                             as AUTH0_URL, and the tokens it issued, as ACCESS_TOKEN, …)
// Every other TypeScript or JavaScript block is complete: type-checked against the packed
// package, then run. A block that starts a server stays up while the shell blocks after it
// run their curl commands against it; a block that does not must exit with code 0.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export type Check = 'fragment' | 'types' | 'skip' | 'run';

export interface Block {
  /** The document, from the repository root. */
  doc: string;
  /** The 1-based line of the opening fence. */
  line: number;
  lang: string;
  code: string;
  check: Check;
  /** The file name the block is written to (in its document's own folder). */
  file: string;
  /** The identity provider whose local stand-in the block runs against, if any. */
  standIn?: string;
  /**
   * For a block with a `<!-- file: … -->` mark, whether the paragraph right before its marks
   * shows that name in backticks, as a reader of the rendered page sees it; else `undefined`.
   */
  fileShown?: boolean;
}

/** Whether the paragraph ending on line `end` (0-based) shows `` `name` ``. */
function paragraphShows(lines: readonly string[], end: number, name: string): boolean {
  for (let k = end; k >= 0 && lines[k]!.trim() !== ''; k--) {
    if (lines[k]!.includes(`\`${name}\``)) return true;
  }
  return false;
}

const CODE = new Set(['ts', 'typescript', 'js', 'javascript', 'mjs', 'cjs']);
const SHELL = new Set(['sh', 'bash', 'shell', 'console']);

/** Whether a block is TypeScript or JavaScript. */
export const isCode = (block: Block) => CODE.has(block.lang);
/** Whether a block is a shell session. */
export const isShell = (block: Block) => SHELL.has(block.lang);

function extensionOf(lang: string, code: string): string {
  if (lang === 'ts' || lang === 'typescript') return '.ts';
  if (lang === 'cjs' || (/\brequire\(/.test(code) && !/^import /m.test(code))) return '.cjs';
  return '.mjs';
}

/** Every fenced block of `doc` (a path from `root`), with its marks. */
export function blocksOf(root: string, doc: string): Block[] {
  const lines = readFileSync(join(root, doc), 'utf8').split('\n');
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\w*)/.exec(lines[i]!);
    if (!open) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i]!); i++) body.push(lines[i]!);
    const marks: string[] = [];
    let j = start - 1;
    for (; j >= 0 && /^(\s*|<!--.*-->)$/.test(lines[j]!); j--) {
      if (lines[j]!.startsWith('<!--')) marks.push(lines[j]!);
    }
    const check = marks.map((m) => /<!-- check: (\w+) -->/.exec(m)?.[1]).find(Boolean);
    const file = marks.map((m) => /<!-- file: ([\w./-]+) -->/.exec(m)?.[1]).find(Boolean);
    const standIn = marks.map((m) => /<!-- stand-in: ([\w-]+) -->/.exec(m)?.[1]).find(Boolean);
    const lang = open[1]!.toLowerCase();
    const code = `${body.join('\n')}\n`;
    blocks.push({
      doc,
      line: start + 1,
      lang,
      code,
      check: (check as Check | undefined) ?? 'run',
      file: file ?? `block-${start + 1}${extensionOf(lang, code)}`,
      ...(file === undefined ? {} : { fileShown: paragraphShows(lines, j, file) }),
      ...(standIn === undefined ? {} : { standIn }),
    });
  }
  return blocks;
}

/** A curl command of a shell block and the lines of output the text claims for it. */
export interface CurlCheck {
  command: string;
  expected: string[];
}

/**
 * The curl commands of a shell block (continuation lines joined), each with the `# ` comment
 * lines after it (what the text says it prints), and the `export NAME=value` lines before it.
 */
export function curlChecks(block: Block): { exports: string[]; checks: CurlCheck[] } {
  const lines = block.code.replace(/\\\n\s*/g, ' ').split('\n');
  const exports: string[] = [];
  const checks: CurlCheck[] = [];
  let current: CurlCheck | undefined;
  for (const line of lines) {
    const comment = /^#\s?(.*)$/.exec(line);
    if (comment) {
      current?.expected.push(comment[1]!);
      continue;
    }
    current = undefined;
    const command = line.replace(/\s+#.*$/, '').trim();
    if (/^export \w+=/.test(command)) exports.push(command);
    if (/^curl\s/.test(command)) {
      current = { command, expected: [] };
      checks.push(current);
    }
  }
  return { exports, checks };
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const pattern = (text: string, flags = '') =>
  new RegExp(`^${text.split('…').map(escapeRegExp).join('.*')}$`, flags);
const HEADER = /^([A-Za-z0-9-]+):\s?(.*)$/;

/** Whether an expected line is prose, not output: it is in parentheses. */
const isProse = (line: string) => /^\(.*\)$/.test(line.trim()) || line.trim() === '';

/**
 * The expected lines that `output` (curl's, with `-i` if the command had it) does not show.
 * A status line is compared by its code; a header line by its name, case-insensitively, and
 * its value; any other line must be a line of the output; `…` stands for anything.
 */
export function unmet(expected: string[], output: string): string[] {
  const lines = output.replace(/\r/g, '').split('\n');
  const statuses = lines.flatMap((l) => /^HTTP\/[\d.]+ (\d{3})/.exec(l)?.[1] ?? []);
  return expected.filter((want) => {
    if (isProse(want)) return false;
    const status = /^HTTP\/[\d.]+ (\d{3})/.exec(want);
    if (status) return !statuses.includes(status[1]!);
    const header = HEADER.exec(want);
    if (header && statuses.length > 0) {
      const name = header[1]!.toLowerCase();
      const value = pattern(header[2]!);
      const found = lines.some((l) => {
        const got = HEADER.exec(l);
        return got !== null && got[1]!.toLowerCase() === name && value.test(got[2]!.trim());
      });
      if (found) return false;
    }
    const whole = pattern(want.trim());
    return !lines.some((l) => whole.test(l.trim()));
  });
}
