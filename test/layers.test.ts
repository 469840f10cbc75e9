/**
 * Core's folders are its layers, and imports point down only: a file may import from its own folder and
 * from the layers below it, never from a layer beside or above it (tests and test support aside).
 */
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const src = fileURLToPath(new URL('../packages/core/src/', import.meta.url));

/** Each layer and the layers it may import from. */
const LAYERS: Readonly<Record<string, readonly string[]>> = {
  foundation: [],
  algorithms: ['foundation'],
  engine: ['foundation', 'algorithms'],
  concurrency: ['foundation', 'engine'],
  throttle: ['foundation', 'algorithms', 'engine', 'concurrency'],
  guava: ['foundation', 'algorithms'],
  adapters: ['foundation', 'algorithms', 'engine', 'concurrency'],
  // The engine contract: what a central backend implements.
  contract: ['foundation', 'algorithms', 'engine'],
  // What every mode over an engine is built from: deadlines, health, the fail mode, the deny cache, node ids,
  // live limits (which call the engine: the contract is below the modes, never the reverse).
  modes: ['foundation', 'algorithms', 'engine', 'contract'],
  // The internal entry (@sluice/core/internal) is a barrel nothing in core imports: what sluice's own packages
  // share, the HTTP adapters' machinery @sluice/nestjs and @sluice/grpc build on (createEvaluator...) included.
  internal: ['foundation', 'algorithms', 'engine', 'concurrency', 'modes', 'contract', 'adapters'],
  admin: ['foundation', 'algorithms', 'engine'],
};

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') && !/\.test(-support)?\.ts$/.test(entry.name) ? [path] : [];
  });
}

const layerOf = (file: string): string => relative(src, file).split('/')[0] as string;

describe("@sluice/core's layers", () => {
  it('every folder of src is a known layer', () => {
    const folders = readdirSync(src, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name);
    expect(folders.sort()).toEqual(Object.keys(LAYERS).sort());
  });

  it('imports point down only: a layer imports its own files and the layers below it', () => {
    const offences: string[] = [];
    for (const file of sources(src)) {
      const layer = layerOf(file);
      if (!(layer in LAYERS)) continue;
      const text = readFileSync(file, 'utf8');
      for (const [, spec] of text.matchAll(/from '(\.{1,2}\/[^']+)'/g)) {
        const target = layerOf(resolve(dirname(file), spec as string));
        if (target !== layer && !(LAYERS[layer] as readonly string[]).includes(target))
          offences.push(`${relative(src, file)} imports ${spec} (${target})`);
      }
    }
    expect(offences).toEqual([]);
  });
});

describe('the packages above the engines', () => {
  const hybrid = fileURLToPath(new URL('../packages/hybrid/src/', import.meta.url));

  it("@sluice/hybrid imports an engine's public API only: no internals of @sluice/redis or @sluice/postgres", () => {
    const offences: string[] = [];
    for (const file of sources(hybrid)) {
      const text = readFileSync(file, 'utf8');
      for (const [, spec] of text.matchAll(/from '(@sluice\/(?:redis|postgres)\/[^']+)'/g))
        offences.push(`${relative(hybrid, file)} imports ${spec}`);
    }
    expect(offences).toEqual([]);
  });
});
