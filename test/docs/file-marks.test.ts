// A guide's multi-file example names each file where a reader sees it: the `<!-- file: … -->`
// mark the docs test reads is an HTML comment, hidden on the rendered page, so the paragraph
// before it must show the same name (`stores.ts`). Reads the documents only: no build.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { root } from '../helpers/packed.js';
import { blocksOf } from './blocks.js';

const DOCS = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
].sort();

describe('file marks', () => {
  it('are found: the guides do have multi-file examples', () => {
    const marked = DOCS.flatMap((doc) => blocksOf(root, doc)).filter(
      (b) => b.fileShown !== undefined,
    );
    expect(marked.length).toBeGreaterThan(0);
  });

  it.each(DOCS)('%s shows the name of every file it marks', (doc) => {
    const hidden = blocksOf(root, doc)
      .filter((block) => block.fileShown === false)
      .map((block) => `${doc}:${block.line} (${block.file})`);
    expect(hidden).toEqual([]);
  });
});
