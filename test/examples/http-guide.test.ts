import { describe, expect, it } from 'vitest';
import { strayedSnippets } from '../helpers/snippets.js';

describe('docs/http.md', () => {
  it('takes its samples from the tested examples', () => {
    expect(strayedSnippets('docs/http.md')).toEqual([]);
  });
});
