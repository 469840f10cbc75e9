// Finds every public function, constructor and static method of the packages' entry points that takes an
// options object, from the sources' types: the unknown-options test fails when one is missing from its table.
import { join } from 'node:path';
import ts from 'typescript';
import { packageEntries } from '../../scripts/entries.mjs';

/** A parameter takes options when it is called so or its type is an options type (`TokenBucketOptions`). */
const OPTIONS_PARAMETER = /^(options|init)$/;
const OPTIONS_TYPE = /Options\b/;

/**
 * Every exported callable that takes an options object, by export name (`SluiceModule.forRoot` for a static
 * method); a name exported by several entries with one declaration (byIp) is listed once.
 */
export function entriesTakingOptions(): Map<string, string> {
  const entries = packageEntries().flatMap(({ name, dir, entries }) =>
    entries.map(([subpath, source]) => ({
      entry: subpath === '.' ? name : `${name}/${subpath.slice(2)}`,
      file: join(dir, source),
    })),
  );
  const config = ts.getParsedCommandLineOfConfigFile(
    join(import.meta.dirname, '../../tsconfig.json'),
    {},
    { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} },
  );
  if (config === undefined) throw new Error('tsconfig.json did not parse');
  const program = ts.createProgram(
    entries.map((e) => e.file),
    config.options,
  );
  const checker = program.getTypeChecker();
  const found = new Map<string, string>();
  const seen = new Set<ts.Declaration>();

  const takesOptions = (signature: ts.Signature): boolean =>
    signature.getParameters().some((parameter) => {
      const declaration = parameter.valueDeclaration;
      if (declaration === undefined || !ts.isParameter(declaration)) return false;
      const typeText = declaration.type?.getText() ?? '';
      return OPTIONS_PARAMETER.test(parameter.name) || OPTIONS_TYPE.test(typeText);
    });

  for (const { entry, file } of entries) {
    const source = program.getSourceFile(file);
    const module = source && checker.getSymbolAtLocation(source);
    if (module === undefined) throw new Error(`${file}: no module symbol`);
    for (const exported of checker.getExportsOfModule(module)) {
      const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
      const declaration = symbol.valueDeclaration;
      if (declaration === undefined || seen.has(declaration)) continue;
      seen.add(declaration);
      const type = checker.getTypeOfSymbolAtLocation(symbol, declaration);
      const name = exported.name;
      if (type.getCallSignatures().some(takesOptions)) found.set(name, entry);
      if (type.getConstructSignatures().some(takesOptions)) found.set(`new ${name}`, entry);
      if (symbol.flags & ts.SymbolFlags.Class) {
        for (const member of checker.getPropertiesOfType(type)) {
          const memberDeclaration = member.valueDeclaration;
          if (memberDeclaration === undefined || member.name === 'prototype') continue;
          const memberType = checker.getTypeOfSymbolAtLocation(member, memberDeclaration);
          if (memberType.getCallSignatures().some(takesOptions)) found.set(`${name}.${member.name}`, entry);
        }
      }
    }
  }
  return found;
}
