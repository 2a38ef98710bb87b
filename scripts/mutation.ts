/**
 * `npm run test:mutation [-- folder…]`: StrykerJS over the security core, one folder after the
 * other (stryker.config.mjs, MUTATION_FOLDER), each incremental from its own file in
 * mutation/; then MUTATION.md from every folder's report (scripts/mutation-summary.ts).
 * `--summary` only rewrites MUTATION.md from the reports there are.
 */
import { spawnSync } from 'node:child_process';
import { FOLDERS } from '../stryker.config.mjs';
import { writeSummary } from './mutation-summary.js';

const args = process.argv.slice(2);
const summaryOnly = args.includes('--summary');
const asked = args.filter((arg) => !arg.startsWith('--'));
const folders = asked.length > 0 ? asked : Object.keys(FOLDERS);
for (const folder of folders) {
  if (!(folder in FOLDERS)) {
    console.error(`unknown folder ${folder}: one of ${Object.keys(FOLDERS).join(', ')}`);
    process.exit(2);
  }
}

if (!summaryOnly) {
  for (const folder of folders) {
    console.log(`\n==> mutation testing: ${folder}`);
    const run = spawnSync('npx', ['stryker', 'run', 'stryker.config.mjs'], {
      stdio: 'inherit',
      env: { ...process.env, MUTATION_FOLDER: folder },
    });
    if (run.status !== 0) {
      console.error(`stryker failed on ${folder} (exit ${run.status})`);
      process.exit(run.status ?? 1);
    }
  }
}
console.log(writeSummary());
