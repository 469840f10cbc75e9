// Reads the packages' public entry points with the TypeScript compiler: which exported callables take an
// options object (the list test/options/unknown-options.test.ts checks), and each option of an options type
// as docs/options.md shows it: the first sentence of its doc comment and its @default tag. The interface
// stays the one home of an option's documentation; render-options.ts only reads it.
import { join } from 'node:path';
import ts from 'typescript';
import { packageEntries } from './entries.mjs';

const root = join(import.meta.dirname, '..');

/** One option as docs/options.md shows it. */
export interface OptionRow {
  readonly name: string;
  /** `required`, the @default tag's text, or `-` (unset unless given). */
  readonly default: string;
  /** The first sentence of the option's doc comment. */
  readonly doc: string;
  /** The interface that declares it (`RateLimitOptions`), to tell an adapter's own options from shared ones. */
  readonly declaredIn: string;
}

/** An exported callable that takes options: the package entry that exports it and its options' type. */
export interface OptionsEntry {
  readonly entry: string;
  readonly type: ts.Type;
}

/** A parameter takes options when it is called so or its type is an options type (`TokenBucketOptions`). */
const OPTIONS_PARAMETER = /^(options|init)$/;
const OPTIONS_TYPE = /Options\b/;

/** Words whose period ends no sentence. */
const ABBREVIATION = /\b(e\.g|i\.e|etc|vs)$/;

/**
 * The first sentence of a doc comment, on one line: up to the first `.`, `?` or `!` that a space or the
 * end follows, outside parentheses, brackets and code spans (so `(a. b)` and `` `x.y` `` do not end it).
 */
export function firstSentence(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  let depth = 0;
  let code = false;
  for (let i = 0; i < flat.length; i++) {
    const c = flat[i] as string;
    if (c === '`') code = !code;
    if (code) continue;
    if ('([{'.includes(c)) depth++;
    else if (')]}'.includes(c)) depth = Math.max(0, depth - 1);
    else if (depth === 0 && '.?!'.includes(c) && (i + 1 === flat.length || flat[i + 1] === ' ')) {
      if (!ABBREVIATION.test(flat.slice(0, i))) return flat.slice(0, i + 1);
    }
  }
  return flat;
}

/** The compiler's view of every package entry point, built once (a program over the sources takes seconds). */
class PublicTypes {
  readonly #program: ts.Program;
  readonly #checker: ts.TypeChecker;
  readonly #files: ReadonlyArray<{ readonly entry: string; readonly file: string }>;
  #entries: Map<string, OptionsEntry> | undefined;

  constructor() {
    this.#files = packageEntries().flatMap(({ name, dir, entries }) =>
      entries.map(([subpath, source]) => ({
        entry: subpath === '.' ? name : `${name}/${subpath.slice(2)}`,
        file: join(dir, source),
      })),
    );
    const config = ts.getParsedCommandLineOfConfigFile(
      join(root, 'tsconfig.json'),
      {},
      { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} },
    );
    if (config === undefined) throw new Error('tsconfig.json did not parse');
    this.#program = ts.createProgram(
      this.#files.map((e) => e.file),
      config.options,
    );
    this.#checker = this.#program.getTypeChecker();
  }

  /**
   * Every exported function, constructor and static method that takes an options object, by export name
   * (`SluiceModule.forRoot` for a static method, `new MemoryStore` for a constructor); a name exported by
   * several entries with one declaration (byIp) is listed once, under the first.
   */
  entries(): ReadonlyMap<string, OptionsEntry> {
    if (this.#entries !== undefined) return this.#entries;
    const checker = this.#checker;
    const found = new Map<string, OptionsEntry>();
    const seen = new Set<ts.Declaration>();
    const optionsType = (signatures: readonly ts.Signature[]): ts.Type | undefined => {
      for (const signature of signatures) {
        for (const parameter of signature.getParameters()) {
          const declaration = parameter.valueDeclaration;
          if (declaration === undefined || !ts.isParameter(declaration)) continue;
          const typeText = declaration.type?.getText() ?? '';
          if (OPTIONS_PARAMETER.test(parameter.name) || OPTIONS_TYPE.test(typeText)) {
            return checker.getNonNullableType(checker.getTypeOfSymbolAtLocation(parameter, declaration));
          }
        }
      }
      return undefined;
    };
    const add = (name: string, entry: string, type: ts.Type | undefined) => {
      if (type !== undefined) found.set(name, { entry, type });
    };
    for (const { entry, file } of this.#files) {
      const source = this.#program.getSourceFile(file);
      const module = source && checker.getSymbolAtLocation(source);
      if (module === undefined) throw new Error(`${file}: no module symbol`);
      for (const exported of checker.getExportsOfModule(module)) {
        const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
        const declaration = symbol.valueDeclaration;
        if (declaration === undefined || seen.has(declaration)) continue;
        seen.add(declaration);
        const type = checker.getTypeOfSymbolAtLocation(symbol, declaration);
        const name = exported.name;
        add(name, entry, optionsType(type.getCallSignatures()));
        add(`new ${name}`, entry, optionsType(type.getConstructSignatures()));
        if (symbol.flags & ts.SymbolFlags.Class) {
          for (const member of checker.getPropertiesOfType(type)) {
            const memberDeclaration = member.valueDeclaration;
            if (memberDeclaration === undefined || member.name === 'prototype') continue;
            const memberType = checker.getTypeOfSymbolAtLocation(member, memberDeclaration);
            add(`${name}.${member.name}`, entry, optionsType(memberType.getCallSignatures()));
          }
        }
      }
    }
    this.#entries = found;
    return found;
  }

  /** The options of an exported entry point, read from the type of its options parameter. */
  rowsOfEntry(name: string): OptionRow[] {
    const found = this.entries().get(name);
    if (found === undefined) throw new Error(`${name}: no exported entry point takes options by that name`);
    return this.#rows(found.type);
  }

  /**
   * The options of a type, or the properties of a constant object (the CLI's flags), declared at the top of
   * `file` (from the repository root), exported or not.
   */
  rowsOfDeclaration(file: string, name: string): OptionRow[] {
    const declaration = this.#declaration(file, name);
    if (declaration === undefined) throw new Error(`${file}: declares no ${name}`);
    return this.#rows(this.#checker.getTypeAtLocation(declaration.name));
  }

  #declaration(
    file: string,
    name: string,
  ): ts.VariableDeclaration | ts.InterfaceDeclaration | ts.TypeAliasDeclaration | undefined {
    const source = this.#program.getSourceFile(join(root, file));
    if (source === undefined) throw new Error(`${file}: not in the program of the package entries`);
    for (const statement of source.statements) {
      const declarations = ts.isVariableStatement(statement)
        ? statement.declarationList.declarations
        : ts.isInterfaceDeclaration(statement) || ts.isTypeAliasDeclaration(statement)
          ? [statement]
          : [];
      const found = declarations.find((d) => ts.isIdentifier(d.name) && d.name.text === name);
      if (found !== undefined) return found;
    }
    return undefined;
  }

  /** The text of a string constant declared at the top of `file` (the CLI's usage). */
  constantText(file: string, name: string): string {
    const initializer = this.#declaration(file, name);
    if (
      initializer === undefined ||
      !ts.isVariableDeclaration(initializer) ||
      initializer.initializer === undefined ||
      !ts.isStringLiteralLike(initializer.initializer)
    ) {
      throw new Error(`${file}: declares no string constant ${name}`);
    }
    return initializer.initializer.text;
  }

  /** One row per property (doc '' when it has none); of a union, every member's (optional unless each requires it). */
  #rows(type: ts.Type): OptionRow[] {
    const checker = this.#checker;
    const members = type.isUnion() ? type.types : [type];
    const byName = new Map<string, ts.Symbol[]>();
    for (const member of members) {
      for (const property of checker.getPropertiesOfType(member)) {
        byName.set(property.name, [...(byName.get(property.name) ?? []), property]);
      }
    }
    return [...byName].map(([name, symbols]) => {
      const docs = symbols.map((s) => ts.displayPartsToString(s.getDocumentationComment(checker)).trim());
      const doc = firstSentence(docs.find((d) => d !== '') ?? '');
      const tags = symbols.flatMap((s) => s.getJsDocTags(checker));
      // A word the doc-comment parser took for a tag (a bare `@scope/package` in the text) cut the comment
      // short there, in the docs and in every editor's hover: refused here, so it is written in backticks.
      const unknown = tags.find((t) => !KNOWN_TAGS.has(t.name));
      if (unknown !== undefined)
        throw new Error(
          `option ${name}: its doc comment has @${unknown.name}, no tag: write \`@${unknown.name}...\` in backticks`,
        );
      const tag = tags.find((t) => t.name === 'default');
      const optional =
        symbols.length < members.length || symbols.some((s) => (s.flags & ts.SymbolFlags.Optional) !== 0);
      const parent = symbols.flatMap((s) => s.declarations ?? []).map((d) => d.parent)[0];
      return {
        name,
        default: tag ? ts.displayPartsToString(tag.text).replace(/\s+/g, ' ').trim() : optional ? '-' : 'required',
        doc,
        declaredIn: parent !== undefined && ts.isInterfaceDeclaration(parent) ? parent.name.text : '',
      };
    });
  }
}

/** The doc-comment tags an option's comment may carry. */
const KNOWN_TAGS: ReadonlySet<string> = new Set(['default', 'example', 'see', 'deprecated', 'remarks', 'link']);

let shared: PublicTypes | undefined;

/** The one compiler view of the packages (built on first use). */
export function publicTypes(): PublicTypes {
  shared ??= new PublicTypes();
  return shared;
}
