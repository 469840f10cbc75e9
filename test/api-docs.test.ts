/**
 * The API reference: TypeDoc documents every exported symbol of every package (its validation fails on an
 * undocumented export: typedoc.json's requiredToBeDocumented with treatValidationWarningsAsErrors), every
 * exported function and class carries an @example, and the committed docs/api is what TypeDoc writes
 * from the sources now (run `npm run docs:api` after changing an exported symbol's documentation).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'sluice-api-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

function typedoc(...args: string[]): string {
  const r = spawnSync(join(root, 'node_modules', '.bin', 'typedoc'), args, { cwd: root, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`typedoc ${args.join(' ')} failed:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

function files(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const visit = (d: string) => {
    for (const name of readdirSync(d)) {
      const path = join(d, name);
      if (statSync(path).isDirectory()) visit(path);
      else out.set(relative(dir, path), readFileSync(path, 'utf8'));
    }
  };
  visit(dir);
  return out;
}

interface Reflection {
  name: string;
  kind: number;
  variant?: string;
  comment?: { blockTags?: { tag: string }[] };
  signatures?: Reflection[];
  children?: Reflection[];
}

const FUNCTION = 64;
const CLASS = 128;
const CONTAINERS = new Set([1, 2, 4]); // project, module, namespace

describe('API reference', () => {
  const out = join(work, 'api');
  const json = join(work, 'api.json');

  it('TypeDoc finds no undocumented export and no broken link', { timeout: 120_000 }, () => {
    typedoc('--out', out, '--json', json);
  });

  it('every exported function and class has an @example', () => {
    const missing: string[] = [];
    const walk = (r: Reflection, path: string) => {
      const name = path === '' ? r.name : `${path}.${r.name}`;
      if (r.kind === FUNCTION || r.kind === CLASS) {
        const comments = [r.comment, ...(r.signatures ?? []).map((s) => s.comment)];
        if (!comments.some((c) => c?.blockTags?.some((t) => t.tag === '@example'))) missing.push(name);
      }
      if (CONTAINERS.has(r.kind)) for (const child of r.children ?? []) walk(child, name);
    };
    walk(JSON.parse(readFileSync(json, 'utf8')) as Reflection, '');
    expect(missing).toEqual([]);
  });

  it('the committed docs/api is what TypeDoc writes from the sources', () => {
    const committed = files(join(root, 'docs', 'api'));
    const generated = files(out);
    expect([...committed.keys()].sort()).toEqual([...generated.keys()].sort());
    const stale = [...generated].filter(([file, text]) => committed.get(file) !== text).map(([file]) => file);
    expect(stale, 'run npm run docs:api').toEqual([]);
  });
});
