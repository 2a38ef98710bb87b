// Guides whose samples come from examples tested elsewhere (the reference server's suites).
import { describe, expect, it } from 'vitest';
import { snippetsOf, strayedSnippets } from '../helpers/snippets.js';

describe('docs/scaling.md', () => {
  it('takes its samples from the reference server’s shared state', () => {
    expect(snippetsOf('docs/scaling.md').length).toBeGreaterThanOrEqual(3);
    expect(strayedSnippets('docs/scaling.md')).toEqual([]);
  });
});
