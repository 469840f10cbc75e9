#!/usr/bin/env node
/**
 * Prints the names each package exports, per entry point (package.json "sluice.entries") and in all: values
 * and types alike, as a user's `import { ... }` sees them. An entry a package lists in "sluice.internal" is the
 * machinery sluice's own packages share (not public API: no documentation promise, no semver); it is counted
 * apart. The surface is counted from the sources with the TypeScript compiler, so no build is needed.
 *   node scripts/count-exports.mjs            counts per package and entry, and the total
 *   node scripts/count-exports.mjs --names    every name too
 *   node scripts/count-exports.mjs --json     the counts and names as JSON
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = new Set(process.argv.slice(2));
for (const arg of args)
  if (!['--names', '--json'].includes(arg)) {
    console.error(`count-exports: unknown option ${arg} (known: --names, --json)`);
    process.exit(2);
  }

const packages = readdirSync(join(root, 'packages'))
  .map((dir) => ({ dir, manifest: JSON.parse(readFileSync(join(root, 'packages', dir, 'package.json'), 'utf8')) }))
  .filter(({ manifest }) => manifest.sluice?.entries !== undefined);

const entryFiles = packages.flatMap(({ dir, manifest }) =>
  Object.entries(manifest.sluice.entries).map(([entry, file]) => ({
    name: manifest.name,
    entry,
    file: join(root, 'packages', dir, file),
    internal: (manifest.sluice.internal ?? []).includes(entry),
  })),
);

const config = ts.getParsedCommandLineOfConfigFile(
  join(root, 'tsconfig.json'),
  {},
  {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => {
      throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    },
  },
);
const program = ts.createProgram({
  rootNames: entryFiles.map((e) => e.file),
  options: { ...config.options, noEmit: true },
});
const checker = program.getTypeChecker();

const result = [];
for (const { name, entry, file, internal } of entryFiles) {
  const source = program.getSourceFile(file);
  const symbol = source === undefined ? undefined : checker.getSymbolAtLocation(source);
  if (symbol === undefined) throw new Error(`count-exports: cannot read ${file}`);
  const names = checker
    .getExportsOfModule(symbol)
    .map((s) => s.getName())
    .sort();
  result.push({ package: name, entry, internal, count: names.length, names });
}

const byPackage = new Map();
for (const row of result) {
  const names = byPackage.get(row.package) ?? { public: new Set(), internal: new Set() };
  for (const n of row.names) names[row.internal ? 'internal' : 'public'].add(`${row.entry}:${n}`);
  byPackage.set(row.package, names);
}
const total = [...byPackage.values()].reduce((sum, names) => sum + names.public.size, 0);
const internal = [...byPackage.values()].reduce((sum, names) => sum + names.internal.size, 0);

if (args.has('--json')) {
  console.log(JSON.stringify({ total, internal, entries: result }, null, 2));
} else {
  for (const [pkg, names] of byPackage) {
    console.log(`${pkg.padEnd(16)} ${String(names.public.size).padStart(4)}`);
    const rows = result.filter((r) => r.package === pkg);
    for (const row of rows) {
      const label = row.internal ? `${row.entry} (internal)` : row.entry;
      if (rows.length > 1 || row.internal) console.log(`  ${label.padEnd(22)} ${String(row.count).padStart(4)}`);
      if (args.has('--names')) console.log(`    ${row.names.join(', ')}`);
    }
  }
  console.log(`${'total (public)'.padEnd(16)} ${String(total).padStart(4)}`);
  console.log(`${'internal'.padEnd(16)} ${String(internal).padStart(4)}`);
}
