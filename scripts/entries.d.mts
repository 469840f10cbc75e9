/** A package's entry points, from `sluice.entries` in its package.json: [subpath, source file] pairs. */
export interface PackageEntries {
  readonly name: string;
  readonly dir: string;
  readonly entries: readonly (readonly [subpath: string, source: string])[];
}

/** Every package's entries (see scripts/entries.mjs). */
export function packageEntries(): PackageEntries[];

/** Where a subpath's build lands in dist/, without extension: '.' -> 'index', './http' -> 'http/index'. */
export function distName(subpath: string): string;
