/**
 * MUTATION.md from StrykerJS's reports in mutation/ (each folder's incremental file): the mutation score
 * per folder (killed and timed-out mutants over all that were tested or not covered), and
 * every surviving mutant with a line saying why (mutation/notes.json: a test added since, or
 * why the mutant is equivalent).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { FOLDERS } from '../stryker.config.mjs';

interface Mutant {
  mutatorName: string;
  replacement?: string;
  status: string;
  location: { start: { line: number; column: number } };
}
interface Report {
  files: Record<string, { mutants: Mutant[] }>;
}

/** The goal per folder (issue 25). */
export const GOAL = 85;
const DETECTED = new Set(['Killed', 'Timeout']);
const UNDETECTED = new Set(['Survived', 'NoCoverage']);

/** A surviving mutant's key in mutation/notes.json. */
const noteKey = (file: string, m: Mutant) => `${file}:${m.location.start.line}:${m.mutatorName}`;

function oneLine(text: string | undefined): string {
  const flat = (text ?? '').replace(/\s+/g, ' ').trim();
  return (flat.length > 60 ? `${flat.slice(0, 57)}…` : flat)
    .replace(/\|/g, '\\|')
    .replace(/`/g, "'");
}

export function writeSummary(path = 'MUTATION.md'): string {
  const notes: Record<string, string> = existsSync('mutation/notes.json')
    ? JSON.parse(readFileSync('mutation/notes.json', 'utf8'))
    : {};
  const rows: string[] = [];
  const survivors: string[] = [];
  for (const folder of Object.keys(FOLDERS)) {
    const file = `mutation/${folder}.incremental.json`;
    if (!existsSync(file)) {
      rows.push(`| ${folder} | not run yet | | | | |`);
      continue;
    }
    const report = JSON.parse(readFileSync(file, 'utf8')) as Report;
    let detected = 0;
    let undetected = 0;
    let ignored = 0;
    for (const [name, { mutants }] of Object.entries(report.files)) {
      for (const m of mutants) {
        if (DETECTED.has(m.status)) detected++;
        else if (UNDETECTED.has(m.status)) {
          undetected++;
          const note = notes[noteKey(name, m)] ?? '—';
          survivors.push(
            `| ${folder} | ${name}:${m.location.start.line} | ${m.status} | ${m.mutatorName} | \`${oneLine(m.replacement)}\` | ${note} |`,
          );
        } else ignored++;
      }
    }
    const score = detected + undetected === 0 ? 100 : (100 * detected) / (detected + undetected);
    const mark = score >= GOAL ? '✅' : '❌';
    rows.push(
      `| ${folder} | ${score.toFixed(1)} % ${mark} | ${detected} | ${undetected} | ${ignored} | ${FOLDERS[folder as keyof typeof FOLDERS].join(', ')} |`,
    );
  }
  const text = `# Mutation testing

StrykerJS mutates portico's security core and runs the unit suites against every mutant
(\`npm run test:mutation\`, incremental; \`npm run test:mutation -- cors\` for one folder). A
mutant is detected when a test fails (killed) or the run times out. The score is detected over
detected plus undetected (survived, or no test covers it). Goal: **≥ ${GOAL} %** per folder.

| folder | score | detected | undetected | not tested (errors, ignored) | files |
|---|---:|---:|---:|---:|---|
${rows.join('\n')}

## Surviving mutants

Each with a line on why (mutation/notes.json): the test added since, or why the mutant is
equivalent (it changes nothing a caller can observe).

| folder | where | status | mutator | replaced by | why |
|---|---|---|---|---|---|
${survivors.join('\n')}
`;
  writeFileSync(path, text);
  return `wrote ${path}: ${rows.length} folders, ${survivors.length} surviving mutants`;
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(writeSummary());
