/**
 * docs/options.md is rendered from the option schemas the entry points parse with (one home for each option,
 * its default and its doc line): it must be what the schemas say now (`npx tsx scripts/render-options.ts`).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { renderOptions } from '../scripts/render-options.js';

describe('docs/options.md', () => {
  it('is what the option schemas say', () => {
    const committed = readFileSync(new URL('../docs/options.md', import.meta.url), 'utf8');
    expect(committed).toBe(renderOptions());
  });
});
