import { type AccessEntry, type Decision, type LimitedKey, createLimiter } from '@sluice/core';
import {
  entriesInForce,
  entryTexts,
  keyHash,
  listEntries,
  ruleFromSpec,
  MAX_BOARD_MINUTES,
  byMostLimited,
  DEFAULT_MAX_KEY_LENGTH,
  StoredConfiguration,
} from '@sluice/core/internal';
import { leasedStore } from '@sluice/hybrid';
import { redisStore } from '@sluice/redis';
import {
  type LimiterDescriptor,
  RedisAccessLists,
  RedisBoard,
  type RedisConnection,
  StartupChecks,
  engineOnConnection,
  readDescriptor,
} from '@sluice/redis/internal';
import type { Cluster, Redis } from 'ioredis';
import { UsageError } from './connect.js';
import { printable } from './printable.js';

/** A prefix no limiter has run under on this Redis (exit code 3). */
export class UnknownPrefixError extends Error {}

/** What a command needs: the connection, the client behind it, the prefix, and where it prints. */
export interface CommandContext {
  readonly client: Redis | Cluster;
  readonly connection: RedisConnection;
  readonly prefix: string;
  readonly json: boolean;
  readonly out: (line: string) => void;
  readonly values: Readonly<Record<string, string | boolean | undefined>>;
  readonly positionals: readonly string[];
  readonly env: Readonly<Record<string, string | undefined>>;
}

/** The deadline of the CLI's own calls: a human waits, not a request. */
const CLI_TIMEOUT_MS = 5_000;

/** What the limiter of the prefix says it runs; UnknownPrefixError when none has run here. */
async function described(ctx: CommandContext): Promise<LimiterDescriptor> {
  const descriptor = await readDescriptor(ctx.connection, ctx.prefix);
  if (descriptor === undefined)
    throw new UnknownPrefixError(
      `no limiter with prefix ${JSON.stringify(printable(ctx.prefix))} has run on this Redis in the last week; check --prefix`,
    );
  return descriptor;
}

/**
 * A limiter of the prefix's rules on this Redis, on a store of the mode its nodes run (the state they write:
 * exact mode's, or leased mode's central state), ready. Divided mode keeps each key's count in each node's
 * memory, out of the CLI's reach: `command` is refused, saying so.
 */
async function limiterOf(ctx: CommandContext, descriptor: LimiterDescriptor, command: string) {
  if (descriptor.rules === undefined)
    throw new UsageError(
      `limiter ${JSON.stringify(printable(ctx.prefix))} cannot be read by the CLI: ${descriptor.why ?? 'its rules are not written down'}`,
    );
  if (descriptor.mode === 'divided')
    throw new UsageError(
      `limiter ${JSON.stringify(printable(ctx.prefix))} runs in divided mode: each node counts its keys in its own ` +
        `memory, where ${command} cannot reach them (do it on the nodes: limiter.${command} or their admin router)`,
    );
  const options = { redis: ctx.client, timeoutMs: CLI_TIMEOUT_MS, failMode: 'closed' } as const;
  const store = descriptor.mode === 'leased' ? leasedStore(options) : redisStore(options);
  const limiter = createLimiter({
    rules: descriptor.rules.map(ruleFromSpec),
    store,
    prefix: ctx.prefix,
    limitedKeys: false,
    accessList: { refreshMs: 600_000 },
  });
  await limiter.ready();
  return {
    limiter,
    close: async () => {
      await limiter.close();
      await store.close();
    },
  };
}

/** One key argument, checked (the limiter's own key rules apply once it is used). */
function keyArg(ctx: CommandContext, command: string): string {
  const key = ctx.positionals[0];
  if (key === undefined || ctx.positionals.length > 1)
    throw new UsageError(`${command} takes one key: sluice ${command} <key>`);
  return key;
}

function wholeNumber(
  ctx: CommandContext,
  name: string,
  fallback: number | undefined,
  min: number,
  max: number,
): number {
  const raw = ctx.values[name];
  if (raw === undefined) {
    if (fallback === undefined) throw new UsageError(`--${name} is required`);
    return fallback;
  }
  const n = Number(raw);
  if (typeof raw !== 'string' || !Number.isInteger(n) || n < min || n > max)
    throw new UsageError(`--${name} must be a whole number from ${min} to ${max}, got ${JSON.stringify(raw)}`);
  return n;
}

const seconds = (ms: number): string => (Number.isFinite(ms) ? `${(ms / 1000).toFixed(1)} s` : 'never');

function printDecision(ctx: CommandContext, key: string, decision: Decision): void {
  if (ctx.json) {
    ctx.out(
      JSON.stringify({
        prefix: ctx.prefix,
        key,
        decision: {
          ...decision,
          retryAfterMs: finite(decision.retryAfterMs),
          resetAfterMs: finite(decision.resetAfterMs),
        },
      }),
    );
    return;
  }
  const rows: Array<[string, string]> = [
    ['key', printable(key)],
    ['limiter', printable(ctx.prefix)],
    ['allowed', decision.allowed ? 'yes' : 'no'],
    ['remaining', `${decision.remaining} of ${decision.limit} (rule ${printable(decision.rule)})`],
    ['resets in', seconds(decision.resetAfterMs)],
  ];
  if (!decision.allowed) rows.push(['retry in', seconds(decision.retryAfterMs)]);
  for (const rule of decision.rules ?? [])
    rows.push([`rule ${printable(rule.name)}`, `${rule.remaining} of ${rule.limit} left`]);
  rows.push(['blocked', decision.blocked === true ? 'yes' : 'no']);
  rows.push(['override', decision.override === true ? 'yes' : 'no']);
  const access = decision.access;
  rows.push([
    'listed',
    access === undefined
      ? 'no'
      : `${access.list} by ${printable(access.entry)}${access.reason === undefined ? '' : ` (${printable(access.reason)})`}`,
  ]);
  for (const [name, value] of rows) ctx.out(`${name.padEnd(12)}${value}`);
}

const finite = (ms: number): number | null => (Number.isFinite(ms) ? ms : null);

/**
 * Divided mode's inspect: what Redis knows of the limiter (its rules in force), and that each node keeps the
 * key's count of its share in its own memory (nothing to read here).
 */
async function inspectDivided(ctx: CommandContext, key: string, descriptor: LimiterDescriptor): Promise<void> {
  const stored = await new StoredConfiguration({
    engine: engineOnConnection(ctx.connection, CLI_TIMEOUT_MS),
    prefix: ctx.prefix,
    timeoutMs: CLI_TIMEOUT_MS,
  }).read();
  const rules = (stored?.rules.map((entry) => entry.rule) ?? (descriptor.rules ?? []).map(ruleFromSpec)).map(
    (rule) => ({ name: rule.name, kind: rule.kind, limit: rule.limit }),
  );
  const counts = 'kept by each node in its own memory (its share of the limit), not in Redis';
  if (ctx.json) {
    ctx.out(
      JSON.stringify({ prefix: ctx.prefix, key, mode: 'divided', configVersion: stored?.version ?? 1, rules, counts }),
    );
    return;
  }
  const rows: Array<[string, string]> = [
    ['key', printable(key)],
    ['limiter', printable(ctx.prefix)],
    ['mode', 'divided'],
    ...rules.map((rule): [string, string] => [`rule ${printable(rule.name)}`, `${rule.kind}, limit ${rule.limit}`]),
    ['counts', counts],
  ];
  for (const [name, value] of rows) ctx.out(`${name.padEnd(12)}${value}`);
}

export async function inspect(ctx: CommandContext): Promise<void> {
  const key = keyArg(ctx, 'inspect');
  const descriptor = await described(ctx);
  if (descriptor.mode === 'divided' && descriptor.rules !== undefined) return inspectDivided(ctx, key, descriptor);
  const { limiter, close } = await limiterOf(ctx, descriptor, 'inspect');
  try {
    printDecision(ctx, key, await limiter.peek(key));
  } finally {
    await close();
  }
}

/** reset, block and unblock: one key, acted on through a limiter of the prefix's rules. */
export async function keyAction(ctx: CommandContext, command: 'reset' | 'block' | 'unblock'): Promise<void> {
  const key = keyArg(ctx, command);
  const ms = command === 'block' ? wholeNumber(ctx, 'ms', undefined, 1, 2_147_483_647) : 0;
  const { limiter, close } = await limiterOf(ctx, await described(ctx), command);
  try {
    if (command === 'reset') await limiter.reset(key);
    else if (command === 'block') await limiter.block(key, ms);
    else await limiter.unblock(key);
  } finally {
    await close();
  }
  if (ctx.json) ctx.out(JSON.stringify({ ok: true, command, prefix: ctx.prefix, key }));
  else
    ctx.out(
      `${command === 'block' ? `blocked for ${ms} ms` : command === 'reset' ? 'reset' : 'unblocked'}: ${printable(key)}`,
    );
}

export async function top(ctx: CommandContext): Promise<void> {
  await described(ctx);
  const n = wholeNumber(ctx, 'n', 10, 1, 1_000);
  const minutes = wholeNumber(ctx, 'minutes', 5, 1, MAX_BOARD_MINUTES);
  const clear = ctx.values['clear-keys'] === true;
  const secret = (ctx.values['key-secret'] as string | undefined) ?? ctx.env.SLUICE_KEY_SECRET ?? ctx.prefix;
  const board = new RedisBoard({ connection: ctx.connection, timeoutMs: CLI_TIMEOUT_MS }, ctx.prefix);
  const now = Math.floor(Date.now() / 60_000);
  const rows = byMostLimited(await board.read(now - minutes + 1, now)).slice(0, n);
  const keys: LimitedKey[] = await Promise.all(
    rows.map(async (row) =>
      clear ? { ...row, hashed: false } : { ...row, key: await keyHash(row.key, secret), hashed: true },
    ),
  );
  if (ctx.json) {
    ctx.out(JSON.stringify({ prefix: ctx.prefix, minutes, keys }));
    return;
  }
  if (keys.length === 0) {
    ctx.out(`no key of ${printable(ctx.prefix)} was denied or near its limit in the last ${minutes} min`);
    return;
  }
  ctx.out(`${'denied'.padStart(10)} ${'near'.padStart(8)} ${'error'.padStart(7)}  key`);
  for (const row of keys)
    ctx.out(
      `${String(row.denied).padStart(10)} ${String(row.nearLimit).padStart(8)} ${String(row.error).padStart(7)}  ${printable(row.key)}`,
    );
}

/** The lists of the prefix, bound directly (they need no rules). */
function listsOf(ctx: CommandContext) {
  const checks = new StartupChecks(ctx.connection, CLI_TIMEOUT_MS, () => {});
  return new RedisAccessLists({
    connection: ctx.connection,
    timeoutMs: CLI_TIMEOUT_MS,
    checks,
    channels: undefined,
  }).bind(ctx.prefix);
}

export async function listChange(ctx: CommandContext, command: 'allow' | 'deny' | 'unlist'): Promise<void> {
  if (ctx.values.force !== true) await described(ctx);
  if (ctx.positionals.length === 0)
    throw new UsageError(`${command} takes one or more entries: sluice ${command} <entry>...`);
  const lists = listsOf(ctx);
  try {
    if (command === 'unlist') {
      const removed = await lists.remove(entryTexts([...ctx.positionals], DEFAULT_MAX_KEY_LENGTH));
      if (ctx.json) ctx.out(JSON.stringify({ ok: true, command, prefix: ctx.prefix, removed }));
      else ctx.out(`removed ${removed} of ${ctx.positionals.length}`);
      return;
    }
    const ttl = ctx.values['ttl-ms'] === undefined ? undefined : wholeNumber(ctx, 'ttl-ms', undefined, 1, 2 ** 47);
    const reason = ctx.values.reason as string | undefined;
    const entries = listEntries(
      command,
      [...ctx.positionals],
      { ...(ttl === undefined ? {} : { ttlMs: ttl }), ...(reason === undefined ? {} : { reason }) },
      DEFAULT_MAX_KEY_LENGTH,
    );
    await lists.put(entries);
    if (ctx.json) ctx.out(JSON.stringify({ ok: true, command, prefix: ctx.prefix, entries: entries.length }));
    else ctx.out(`${command === 'allow' ? 'allowed' : 'denied'}: ${entries.map((e) => printable(e.entry)).join(', ')}`);
  } finally {
    lists.unbind();
  }
}

export async function lists(ctx: CommandContext): Promise<void> {
  await described(ctx);
  const binding = listsOf(ctx);
  try {
    // In force by Redis TIME, as the nodes count: this machine's clock decides nothing.
    const entries: AccessEntry[] = entriesInForce(await binding.read());
    if (ctx.json) {
      ctx.out(JSON.stringify({ prefix: ctx.prefix, entries }));
      return;
    }
    if (entries.length === 0) ctx.out(`the lists of ${printable(ctx.prefix)} are empty`);
    for (const e of entries) {
      const until = e.expiresAt === undefined ? '' : ` until ${new Date(e.expiresAt).toISOString()}`;
      const why = e.reason === undefined ? '' : ` (${printable(e.reason)})`;
      ctx.out(`${e.list.padEnd(6)}${printable(e.entry)}${until}${why}`);
    }
  } finally {
    binding.unbind();
  }
}
