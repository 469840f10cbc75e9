import { parseArgs } from 'node:util';
import { knownOptions } from '@sluice/core/internal';
import { toConnection } from '@sluice/redis/internal';
import { UsageError, connect } from './connect.js';
import { type CommandContext, UnknownPrefixError, inspect, keyAction, listChange, lists, top } from './commands.js';
import { printable } from './printable.js';

/** Where the CLI prints, and the environment it reads (REDIS_URL, SLUICE_PREFIX, SLUICE_KEY_SECRET). */
export interface CliIo {
  /** Prints one line of the command's output (stdout). */
  readonly out: (line: string) => void;
  /** Prints one line of a failure or of usage (stderr). */
  readonly err: (line: string) => void;
  readonly env: Readonly<Record<string, string | undefined>>;
}

/** The exit codes: done, the operation failed (Redis unreachable or refusing), a usage error, an unknown prefix. */
export const EXIT = { ok: 0, failed: 1, usage: 2, unknownPrefix: 3 } as const;

/** What `sluice --help` prints. */
export const USAGE = `usage: sluice <command> [arguments] --prefix <prefix> [--url redis://host:6379 | --cluster host:port,...] [--json]

commands (they read and write the Redis state the limiters of the prefix keep; no service needs to run):
  inspect <key>                 what the key has left under each rule, its ban, override and list entry
  reset <key>                   forget what the key used
  block <key> --ms <ms>         deny the key on every node for ms
  unblock <key>                 lift a ban
  top [--n 10] [--minutes 5]    the keys denied most (then near their limit), every node's counts
      [--clear-keys | --key-secret <secret>]   keys in clear, or hashed as the limiters hash them
  allow <entry>...              keys, IP addresses or CIDR ranges that skip limiting
  deny <entry>...               ... that are denied before the rules
      [--ttl-ms <ms>] [--reason <text>] [--force: the prefix need not have run here yet]
  unlist <entry>...             take entries off the lists
  lists                         the allow and deny lists

--url defaults to REDIS_URL, then redis://127.0.0.1:6379; --prefix to SLUICE_PREFIX. Exit codes: 0 done,
1 the operation failed, 2 a usage error, 3 no limiter of that prefix has run on this Redis.`;

const COMMANDS = ['inspect', 'reset', 'block', 'unblock', 'top', 'allow', 'deny', 'unlist', 'lists'] as const;
type Command = (typeof COMMANDS)[number];

/**
 * Runs the sluice command line `argv` (without node and the script): prints through `io`, resolves to the
 * exit code. Every failure is one line on `err`, naming what was wrong; nothing it prints from Redis can
 * drive the terminal (see printable).
 * @example
 * process.exitCode = await runCli(process.argv.slice(2), { out: console.log, err: console.error, env: process.env })
 */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (error) {
    io.err(`sluice: ${printable(error instanceof Error ? error.message : String(error))}`);
    io.err('run sluice --help for usage');
    return EXIT.usage;
  }
  const { values, positionals } = parsed;
  if (values.help === true || positionals.length === 0) {
    (values.help === true ? io.out : io.err)(USAGE);
    return values.help === true ? EXIT.ok : EXIT.usage;
  }
  const [name, ...rest] = positionals;
  if (!(COMMANDS as readonly string[]).includes(name as string)) {
    io.err(`sluice: unknown command ${JSON.stringify(printable(name as string))}; commands: ${COMMANDS.join(', ')}`);
    return EXIT.usage;
  }
  const prefix = (values.prefix as string | undefined) ?? io.env.SLUICE_PREFIX;
  if (prefix === undefined || prefix === '') {
    io.err('sluice: --prefix is required (the prefix the limiters were created with), or set SLUICE_PREFIX');
    return EXIT.usage;
  }
  let client: Awaited<ReturnType<typeof connect>> | undefined;
  try {
    const cluster = values.cluster as string | undefined;
    client = await connect({
      url: (values.url as string | undefined) ?? io.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
      clusterNodes: cluster === undefined ? undefined : cluster.split(','),
    });
    const ctx: CommandContext = {
      client,
      connection: toConnection(client),
      prefix,
      json: values.json === true,
      out: io.out,
      values,
      positionals: rest,
      env: io.env,
    };
    await dispatch(name as Command, ctx);
    return EXIT.ok;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    io.err(`sluice: ${printable(message.split('\n')[0] as string)}`);
    if (error instanceof UsageError || isInputError(error)) return EXIT.usage;
    if (error instanceof UnknownPrefixError) return EXIT.unknownPrefix;
    return EXIT.failed;
  } finally {
    client?.disconnect();
  }
}

/** sluice's own typed input errors (a bad CIDR range, too many entries): the command line's fault. */
const isInputError = (error: unknown): boolean =>
  error instanceof Error && (error.name === 'SluiceTypeError' || error.name === 'SluiceRangeError');

/** Every flag, for parseArgs; an unknown one is refused by the check every sluice entry point shares. */
// Each flag's doc comment is its line in docs/options.md (scripts/render-options.ts reads them).
const FLAGS = {
  /** The Redis server the limiters use. @default REDIS_URL, then redis://127.0.0.1:6379 */
  url: { type: 'string' },
  /** A Redis Cluster instead: its seed nodes, `host:port,...`. */
  cluster: { type: 'string' },
  /** The prefix the limiters were created with (required). @default SLUICE_PREFIX */
  prefix: { type: 'string' },
  /** Print JSON instead of text. @default false */
  json: { type: 'boolean' },
  /** Print the usage. @default false */
  help: { type: 'boolean', short: 'h' },
  /** block: how long the ban lasts, in ms (required). */
  ms: { type: 'string' },
  /** allow, deny: how long the entries hold, in ms. @default until removed */
  'ttl-ms': { type: 'string' },
  /** allow, deny: why the entries are listed (shown with a denial, on the admin page and by lists). */
  reason: { type: 'string' },
  /** top: how many keys to show, 1 to 1,000. @default 10 */
  n: { type: 'string' },
  /** top: the minutes to sum (this one included). @default 5 */
  minutes: { type: 'string' },
  /** top: show keys in clear (for limiters created with `limitedKeys: { clearKeys: true }`). @default false */
  'clear-keys': { type: 'boolean' },
  /** top: the secret the limiters hash keys with. @default SLUICE_KEY_SECRET, then the prefix */
  'key-secret': { type: 'string' },
  /** allow, deny: write even if no limiter of the prefix has run on this Redis yet. @default false */
  force: { type: 'boolean' },
} as const;

function parse(argv: readonly string[]) {
  const config = { args: [...argv], allowPositionals: true, options: FLAGS };
  // parseArgs' own refusal names the flag but not the known ones: read leniently first, refuse by the shared check.
  knownOptions('the flags', FLAGS, parseArgs({ ...config, strict: false }).values, true);
  return parseArgs({ ...config, strict: true });
}

function dispatch(command: Command, ctx: CommandContext): Promise<void> {
  switch (command) {
    case 'inspect':
      return inspect(ctx);
    case 'reset':
    case 'block':
    case 'unblock':
      return keyAction(ctx, command);
    case 'top':
      return top(ctx);
    case 'allow':
    case 'deny':
    case 'unlist':
      return listChange(ctx, command);
    case 'lists':
      return lists(ctx);
  }
}
