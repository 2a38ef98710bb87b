import { describe, expect, it } from 'vitest';
import { snippetsOf, strayedSnippets } from '../helpers/snippets.js';

describe('docs/http.md', () => {
  it('takes its samples from the tested examples', () => {
    expect(snippetsOf('docs/http.md').length).toBeGreaterThanOrEqual(11);
    expect(strayedSnippets('docs/http.md')).toEqual([]);
  });
});
