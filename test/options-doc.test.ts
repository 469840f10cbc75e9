/**
 * docs/options.md is rendered from each option's one home, the doc comments of its options type (a schema
 * only checks an option: test/options/schema-defaults.test.ts): it must be what those say now (`npx tsx scripts/render-options.ts`), and every public entry point
 * that takes options must have a section, so a new one cannot be left out of it.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { renderOptions } from '../scripts/render-options.js';
import { CALLS_TAKING_OPTIONS, NOT_TRIED, entriesTakingOptions } from './options/option-entries.js';

const committed = () => readFileSync(new URL('../docs/options.md', import.meta.url), 'utf8');

/** The entry points a heading names: `## fastifyRateLimit, rateLimitHook (@sluice/core/http)...`. */
function documented(markdown: string): Set<string> {
  const names = [...markdown.matchAll(/^##+ (.+?) \(@sluice\//gm)].flatMap((match) => (match[1] as string).split(', '));
  return new Set(names);
}

describe('docs/options.md', () => {
  it('is what the options types say', () => {
    expect(committed()).toBe(renderOptions());
  });

  it('has a section for every entry point that takes options', () => {
    const sections = documented(committed());
    const entries = [...entriesTakingOptions().keys()].filter((name) => !(name in NOT_TRIED));
    const missing = [...entries, ...CALLS_TAKING_OPTIONS].filter((name) => !sections.has(name));
    expect(missing, 'entry points with no section in docs/options.md (see scripts/render-options.ts)').toEqual([]);
  });
});
