/**
 * Adding an algorithm touches the files docs/ARCHITECTURE.md lists ("## Adding an algorithm") and no others.
 * A file that names every kind of the registry is a table of algorithms; one that names all but one or two is
 * probably such a table missing a kind (calendarWindow was once missing from five lists that no compiler
 * checked). Every such source file is either in ARCHITECTURE's list or here, with the reason it may stay.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ALGORITHM_KINDS } from '@sluice/test-kit';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** Files that may name (nearly) every kind without being in ARCHITECTURE's list, each with why. */
const ALLOWED: Readonly<Record<string, string>> = {
  'bench/src/core-subjects.ts':
    'its speed subjects iterate ALGORITHM_KINDS; the heap-per-key table measures five chosen kinds',
  'test/seams/rolling-deploy-kinds.test.ts':
    'its rules come from ALGORITHMS; it names kinds only as the chosen pairs a deploy switches between',
  'test/redis/store.test.ts':
    "a table of each kind's stored fields, in lines the lead owns (no calendarWindow row yet: left to them)",
};

/** The section's numbered items, and the count its first sentence gives. */
function architectureList(): { items: string[]; count: number } {
  const text = readFileSync(`${root}docs/ARCHITECTURE.md`, 'utf8');
  const start = text.indexOf('## Adding an algorithm\n');
  expect(start, 'docs/ARCHITECTURE.md has a section "## Adding an algorithm"').toBeGreaterThan(-1);
  const section = text.slice(start, text.indexOf('\n## ', start + 1));
  const items = section.split('\n').filter((line) => /^\d+\. /.test(line));
  const count = /Files you touch \((\d+)\)/.exec(section);
  expect(count, 'the section says how many files: "Files you touch (N)"').not.toBeNull();
  return { items, count: Number(count![1]) };
}

/**
 * The files an item names: the repository paths in backticks on its first line (placeholders such as
 * `<name>.ts` included); its later lines explain, and may mention files it does not touch.
 */
function pathsOf(item: string): string[] {
  return [...item.matchAll(/`([\w./<>-]+\.(?:ts|mts|mjs|lua|md))`/g)]
    .map((m) => m[1]!)
    .filter((p) => p.includes('/') || p === 'README.md');
}

/** The tracked sources where a table of algorithms could be kept. */
function sources(): string[] {
  return execFileSync('git', ['ls-files', 'packages', 'test', 'bench', 'scripts', 'examples'], {
    cwd: root,
    encoding: 'utf8',
  })
    .split('\n')
    .filter((f) => /\.(ts|mts|mjs|lua)$/.test(f) && existsSync(`${root}${f}`));
}

/** The kinds of the registry a file names, as whole words. */
function kindsNamedIn(file: string): string[] {
  const text = readFileSync(`${root}${file}`, 'utf8');
  return ALGORITHM_KINDS.filter((kind) => new RegExp(`\\b${kind}\\b`).test(text));
}

describe('adding an algorithm touches the files ARCHITECTURE.md lists', () => {
  const { items, count } = architectureList();
  const listed = new Set(items.flatMap(pathsOf));

  it('the list is numbered 1 to N, N is the count it states, and every file it names exists', () => {
    expect(items.map((item) => Number(/^(\d+)\./.exec(item)![1]))).toEqual(items.map((_, i) => i + 1));
    expect(items.length).toBe(count);
    for (const item of items) expect(pathsOf(item).length, item).toBeGreaterThan(0);
    for (const file of listed) if (!file.includes('<')) expect(existsSync(`${root}${file}`), file).toBe(true);
  });

  // A file naming every kind, or all but one or two (at least 3 kinds): what to do with it.
  const tables = sources()
    .map((file) => ({ file, named: kindsNamedIn(file) }))
    .filter(({ named }) => named.length >= Math.max(3, ALGORITHM_KINDS.length - 2));

  it('every file naming every kind is in the list or allowed with a reason', () => {
    const unlisted = tables
      .filter(({ file, named }) => named.length === ALGORITHM_KINDS.length && !listed.has(file) && !(file in ALLOWED))
      .map(({ file }) => file);
    expect(
      unlisted,
      'a table of every algorithm: make it iterate ALGORITHMS (@sluice/test-kit), or key it by AlgorithmKind and ' +
        'list it in docs/ARCHITECTURE.md "## Adding an algorithm"',
    ).toEqual([]);
  });

  it('every file naming all kinds but one or two is in the list or allowed with a reason', () => {
    const unlisted = tables
      .filter(({ file, named }) => named.length < ALGORITHM_KINDS.length && !listed.has(file) && !(file in ALLOWED))
      .map(({ file, named }) => `${file} lacks ${ALGORITHM_KINDS.filter((k) => !named.includes(k)).join(', ')}`);
    expect(
      unlisted,
      'probably a list of algorithms missing a kind: make it iterate ALGORITHMS (@sluice/test-kit), or key it by ' +
        'AlgorithmKind and list it in docs/ARCHITECTURE.md "## Adding an algorithm"',
    ).toEqual([]);
  });

  it("README's table of algorithms has a row for every kind of the registry (item 12, which no compiler checks)", () => {
    const rows = readFileSync(`${root}README.md`, 'utf8')
      .split('\n')
      .map((line) => /^\| `(\w+)` +\|/.exec(line)?.[1])
      .filter((kind) => kind !== undefined);
    for (const kind of ALGORITHM_KINDS) expect(rows, kind).toContain(kind);
  });

  it('every allowed file still names (nearly) every kind, so the allowlist holds no stale entry', () => {
    const found = new Set(tables.map(({ file }) => file));
    for (const [file, reason] of Object.entries(ALLOWED)) {
      expect(reason.length, file).toBeGreaterThan(0);
      expect(found.has(file), `${file} no longer names (nearly) every kind: drop it from ALLOWED`).toBe(true);
    }
  });
});
