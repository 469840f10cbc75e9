import { SluiceRangeError, SluiceTypeError } from './errors.js';
import { describe, optionsObject } from './validate.js';

/**
 * One option of a public options type, as code needs it: how a given value is checked and its default. What
 * the option means is written once, on the options type's property (its doc comment and `@default` tag,
 * which docs/options.md is rendered from); the schema is declared against that type (SchemaOf), so the two
 * cannot differ in an option. `check` gets the option's name and a value that is not undefined, and returns
 * it as the option's type or throws a typed error naming both (the validators of validate.ts have this shape).
 */
export interface OptionSpec<T> {
  /** Checks a given value (never undefined unless the option is required): the value, typed, or a typed error. */
  readonly check: (name: string, value: unknown) => T;
  /** The value when the option is not given; absent, a missing option stays undefined. */
  readonly default?: T;
  /** The exported constant that holds the default (`DEFAULT_TIMEOUT_MS`), which the type's `@default` names. */
  readonly defaultName?: string;
  /** True when the option must be given: a missing one is checked as undefined, so its check names it. */
  readonly required?: boolean;
}

/** An option with a default: parsed, it is never undefined. */
export interface DefaultedOption<T> extends OptionSpec<T> {
  readonly default: T;
}

/** An option that must be given: parsed, it is never undefined. */
export interface RequiredOption<T> extends OptionSpec<T> {
  readonly required: true;
}

/** An options type's schema: every option it takes, by name. */
export type OptionSchema = Readonly<Record<string, OptionSpec<unknown>>>;

/** Every option name of an options type (of a union type: every member's). */
type OptionKey<T> = T extends unknown ? keyof T : never;

/** The type an option is given as, across a union's members, without undefined. */
type GivenType<T, K extends PropertyKey> = NonNullable<T extends unknown ? (K extends keyof T ? T[K] : never) : never>;

/**
 * The schema of an options type, to declare one against its type:
 * `const X_OPTIONS = { ... } as const satisfies SchemaOf<XOptions>`. The compiler then refuses an option the
 * type has and the schema lacks, and one the schema has and the type lacks; and each check must return the
 * option's type, but for the options `Parsed` names, whose check returns another form of what was given
 * (`rules`: a policy as a list of rules, `redis`: a client as a connection).
 */
export type SchemaOf<T, Parsed extends OptionKey<T> = never> = {
  readonly [K in OptionKey<T>]-?: K extends Parsed ? OptionSpec<unknown> : OptionSpec<GivenType<T, K>>;
};

/** Options after parseOptions: each checked, with its default when it has one. */
export type ParsedOptions<S extends OptionSchema> = {
  readonly [K in keyof S]: S[K] extends DefaultedOption<infer T>
    ? T
    : S[K] extends RequiredOption<infer T>
      ? T
      : S[K] extends OptionSpec<infer T>
        ? T | undefined
        : never;
};

/**
 * An option with a default.
 * @example
 * const timeoutMs = option(timerDuration, DEFAULT_TIMEOUT_MS)
 */
export function option<T>(
  check: (name: string, value: unknown) => T,
  defaultValue: T,
  defaultName?: string,
): DefaultedOption<T> {
  return defaultName === undefined ? { check, default: defaultValue } : { check, default: defaultValue, defaultName };
}

/**
 * An option that must be given; `check` is called with undefined when it is missing, and throws naming it.
 * @example
 * const max = required(positiveInteger)
 */
export function required<T>(check: (name: string, value: unknown) => T): RequiredOption<T> {
  return { check, required: true };
}

/**
 * An option with no default: undefined unless given (or a default that depends on other options, which
 * the entry point works out after parsing).
 * @example
 * const onDecision = optional(fn)
 */
export function optional<T>(check: (name: string, value: unknown) => T): OptionSpec<T> {
  return { check };
}

/**
 * Every option an options type takes, by name, each once (of a union type: every member's). Declared as
 * `const NAMES: OptionNames<TokenBucketOptions> = { capacity: true, ... }`, the list cannot drift from the
 * type: the compiler refuses a missing name and one the type does not have.
 */
export type OptionNames<T> = { readonly [K in T extends unknown ? keyof T : never]-?: true };

/**
 * Options renamed before the first release: an earlier name to its new names. An earlier name given where
 * one of its new names is an option is refused (as any unknown one) saying which, so a caller of the earlier
 * API reads what to write instead. `onLimited` stays the name of being told of a refusal (gRPC, BullMQ);
 * the callbacks that answer one are `limitedResponse` (HTTP) and `limitedError` (NestJS).
 */
const RENAMED_OPTIONS: Readonly<Record<string, readonly string[]>> = {
  onLimited: ['limitedResponse', 'limitedError'],
  key: ['scope'],
  periodMs: ['windowMs'],
  maxLength: ['maxKeyLength'],
  retries: ['maxRetries'],
  initial: ['initialPermits'],
  rate: ['permitsPerSecond'],
};

/** `; it is called X now` when `name` is an earlier name of X, an option `known` has; else nothing. */
function renamedTo(name: string, known: object): string {
  const now = Object.hasOwn(RENAMED_OPTIONS, name)
    ? RENAMED_OPTIONS[name]?.find((n) => Object.hasOwn(known, n))
    : undefined;
  return now === undefined ? '' : `; it is called ${now} now`;
}

/**
 * The unknown-option half of parseOptions, for an entry point that checks each option's value itself: a
 * plain object (or undefined when `required` is false) whose every option `known` names, else a typed error
 * naming the unknown one and listing the known ones. `known` is a schema or an OptionNames record.
 * @example
 * knownOptions('tokenBucket options', TOKEN_BUCKET_OPTIONS, options, true)
 */
export function knownOptions<T extends object>(
  what: string,
  known: object,
  given: T | undefined,
  required: boolean,
): T | undefined {
  const object = optionsObject(what, given, required) as Record<string, unknown> | undefined;
  if (object === undefined) return given;
  // for-in, not Object.keys: a call's options (tryAcquire's) are checked per decision, and this allocates nothing.
  for (const name in object) {
    if (Object.hasOwn(object, name) && !Object.hasOwn(known, name) && object[name] !== undefined) {
      const names = Object.keys(known);
      throw new SluiceTypeError(
        name,
        object[name],
        `${what} have no option ${JSON.stringify(name)} (got ${describe(object[name])})${renamedTo(name, known)}; ` +
          (names.length === 0 ? 'they take none' : `the options are ${names.join(', ')}`),
      );
    }
  }
  return given;
}

/**
 * Checks an options object against its schema in one step: a plain object (or undefined when `required` is
 * false), no option the schema does not know (a misspelt `timeoutMS` is an error naming the options there
 * are, not a silent default), each given option checked, each missing one given its default. Cross-field
 * checks are the entry point's, after this.
 * @example
 * const o = parseOptions('redisStore options', REDIS_STORE_OPTIONS, options, true)
 */
export function parseOptions<S extends OptionSchema>(
  what: string,
  schema: S,
  given: unknown,
  required: boolean,
): ParsedOptions<S> {
  const object = knownOptions(what, schema, given as object | undefined, required) as
    | Record<string, unknown>
    | undefined;
  const parsed: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(schema)) {
    const value = object?.[name];
    parsed[name] = value === undefined && spec.required !== true ? spec.default : spec.check(name, value);
  }
  return parsed as ParsedOptions<S>;
}

/**
 * A boolean option's check.
 * @example
 * const shadow = option(booleanValue, false)
 */
export function booleanValue(name: string, value: unknown): boolean {
  if (typeof value !== 'boolean')
    throw new SluiceTypeError(name, value, `${name} must be a boolean, got ${describe(value)}`);
  return value;
}

/**
 * A function option's check.
 * @typeParam F the function's type, as the options type declares it
 * @example
 * const onDecision = optional(functionValue)
 */
export function functionValue<F extends (...args: never[]) => unknown>(name: string, value: unknown): F {
  if (typeof value !== 'function')
    throw new SluiceTypeError(name, value, `${name} must be a function, got ${describe(value)}`);
  return value as F;
}

/**
 * A check that takes one of `choices`.
 * @example
 * const failMode = option(oneOf(['local', 'open', 'closed']), 'local')
 */
export function oneOf<const C extends readonly string[]>(choices: C): (name: string, value: unknown) => C[number] {
  return (name, value) => {
    if (!choices.includes(value as string)) {
      throw new SluiceRangeError(
        name,
        value,
        `${name} must be ${choices
          .map((c) => `'${c}'`)
          .join(', ')
          .replace(/, ([^,]*)$/, ' or $1')}, got ${describe(value)}`,
      );
    }
    return value as C[number];
  };
}
