/**
 * Every key a script touches is one of its KEYS. A key built inside a script (a window's key from the
 * server's TIME, the previous window of a sliding counter) is outside Redis's documented contract for scripts,
 * and servers that hold scripts to it refuse such a call (Dragonfly by default), so sluice's scripts name no
 * key of their own: a window algorithm's state is its rule's one key, which the client names.
 *
 * Checked at run time on a throwaway redis-server: MONITOR shows each command a script runs (source `lua`)
 * just before the call that ran it (FCALL or EVALSHA, with its KEYS); the server itself says which of a
 * command's arguments are keys (COMMAND GETKEYS). Every script of every mode runs here: decisions alone and
 * in batches across window boundaries, on the server's clock and on a client clock, policies, bans, refunds,
 * penalties, resets, live limits (a change with carry, an override), the board, access lists, concurrency
 * slots, a throttle's pause, the fail mode's fleet, leases and divided mode's membership and reserve.
 */
import { createHash } from 'node:crypto';
import {
  type AlgorithmKind,
  ManualClock,
  concurrencyLimiter,
  createLimiter,
  fixedWindow,
  slidingWindowCounter,
  smoothBursty,
  throttle,
  tokenBucket,
} from '@sluice/core';
import { redisStore } from '@sluice/redis';
import { ALGORITHMS, ALGORITHM_KINDS } from '@sluice/test-kit';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nextEvent } from '../harness/events.js';
import { dividedLimiterOn, leasedLimiterOn } from '../harness/hybrid.js';
import { type TestRedis, startTestRedis } from '../harness/redis-server.js';

let server: TestRedis;
let admin: Redis;
beforeAll(async () => {
  server = await startTestRedis();
  admin = new Redis(server.url);
});
afterAll(async () => {
  admin?.disconnect();
  await server?.stop();
});

const SCRIPT_CALLS = new Set(['fcall', 'fcall_ro', 'evalsha', 'evalsha_ro', 'eval', 'eval_ro']);

/** A script call as MONITOR showed it: the function or sha it called (or the source it sent), its KEYS, each command it ran. */
interface Seen {
  readonly call: string;
  readonly keys: ReadonlySet<string>;
  readonly inner: string[][];
}

/** An argument as MONITOR prints it, back to its bytes (sdscatrepr: \\n, \\", \\xHH, ...), as latin1 text. */
function monitorArg(text: string): string {
  return text.replace(/\\(x[0-9a-f]{2}|.)/g, (_, code: string) => {
    if (code.length === 3) return String.fromCharCode(Number.parseInt(code.slice(1), 16));
    return { n: '\n', r: '\r', t: '\t', a: '\u0007', b: '\b' }[code] ?? code;
  });
}

/**
 * Records every script call on the server from now on. Redis 7 shows a script call (EVAL, EVALSHA, FCALL)
 * before the commands it runs (source `lua`), which follow it until the next command of any client.
 */
async function watchScripts(): Promise<{ calls: Seen[]; stop: () => void }> {
  const monitor = await admin.monitor();
  const calls: Seen[] = [];
  let current: Seen | undefined;
  monitor.on('monitor', (_time: string, raw: string[], source: string) => {
    const args = raw.map(monitorArg);
    if (source === 'lua') {
      if (current === undefined) throw new Error(`a script's command with no script call before it: ${args[0]}`);
      current.inner.push(args);
      return;
    }
    current = undefined;
    if (SCRIPT_CALLS.has((args[0] ?? '').toLowerCase())) {
      const n = Number(args[2]);
      current = { call: args[1] as string, keys: new Set(args.slice(3, 3 + n)), inner: [] };
      calls.push(current);
    }
  });
  return { calls, stop: () => monitor.disconnect() };
}

/** The key arguments of a command, as the server says (COMMAND GETKEYS; none for PUBLISH, TIME, ...). */
async function keysOf(command: readonly string[]): Promise<string[]> {
  try {
    const keys = (await admin.callBuffer(
      'COMMAND',
      'GETKEYS',
      ...command.map((arg) => Buffer.from(arg, 'latin1')),
    )) as Buffer[];
    return keys.map((key) => key.toString('latin1'));
  } catch {
    return [];
  }
}

/** The entry file a script's source runs (the last file composed: its header comes last). */
const entryOf = (source: string): string | undefined => [...source.matchAll(/^-- (\w+)\.lua:/gm)].at(-1)?.[1];

/** The script each call ran, by its entry file's name: FCALL's function (FUNCTION LIST), EVAL's source, EVALSHA's sha. */
async function entries(calls: readonly Seen[]): Promise<Map<string, string>> {
  const byCall = new Map<string, string>();
  const libraries = (await admin.call('FUNCTION', 'LIST', 'WITHCODE')) as unknown[][];
  for (const library of libraries) {
    const fields = new Map<string, unknown>();
    for (let i = 0; i + 1 < library.length; i += 2) fields.set(String(library[i]), library[i + 1]);
    const entry = /KEYS, ARGV = keys, args\n-- (\w+)\.lua:/.exec(String(fields.get('library_code')))?.[1];
    if (entry !== undefined) byCall.set(String(fields.get('library_name')), entry);
  }
  for (const { call } of calls) {
    const entry = call.length > 40 ? entryOf(call) : undefined;
    if (entry === undefined) continue;
    byCall.set(call, entry);
    byCall.set(createHash('sha1').update(Buffer.from(call, 'latin1')).digest('hex'), entry);
  }
  return byCall;
}

describe('every key a script touches is in its KEYS', () => {
  it('in every mode and every control, on the server clock and a client clock, across window boundaries', async () => {
    const { calls, stop } = await watchScripts();
    const redis = new Redis(server.url);
    // One rule of every kind of the registry, each named by its kind.
    const kinds = () =>
      ALGORITHM_KINDS.map((kind) =>
        ALGORITHMS[kind].example({ limit: 5, windowMs: 1_000, perSecond: 5 }, { name: kind }),
      );
    const aloneOf = <T>(alone: readonly T[], kind: AlgorithmKind): T => alone[ALGORITHM_KINDS.indexOf(kind)] as T;
    try {
      // Exact mode on a client clock walked across windows (the previous window of a sliding counter is read),
      // and on the server's TIME; a policy of every kind that refunds, and each kind alone (decide_one.lua).
      const clock = new ManualClock(1_000_000);
      for (const store of [redisStore({ redis, clock, failMode: 'local' }), redisStore({ redis, failMode: 'local' })]) {
        // The policy holds the kinds that can give permits back (it is refunded below); each kind runs alone too.
        const policy = createLimiter({
          rules: kinds().filter((rule) => rule.refundable),
          store,
          prefix: `keys-policy-${calls.length}`,
        });
        await policy.ready();
        const alone = kinds().map((rule, i) =>
          createLimiter({
            rules: { ...rule, blockMs: 0 } as typeof rule,
            store,
            prefix: `keys-alone-${i}-${calls.length}`,
          }),
        );
        for (let step = 0; step < 4; step++) {
          await policy.tryAcquire('k');
          await Promise.all(['k', 'a', 'b'].map((key) => policy.tryAcquire(key)));
          for (const limiter of alone) {
            await limiter.tryAcquire('k');
            await Promise.all([limiter.tryAcquire('k'), limiter.tryAcquire('a'), limiter.peek('b')]);
          }
          clock.advance(700);
        }
        const granted = await policy.tryAcquire('r');
        await policy.refund('r', 1, { decision: granted });
        await policy.penalize('r', 2);
        await policy.block('r', 5_000);
        await policy.tryAcquire('r');
        await policy.unblock('r');
        await policy.reset('r');
        await policy.topLimited(5);
        await policy.allow('10.0.0.1');
        await policy.deny('10.0.0.2');
        await policy.accessList();
        for (const limiter of alone) await limiter.reset('k');
        // Live limits: a change carried by first touch, an override.
        const live = aloneOf(alone, 'fixedWindow');
        await live.reconfigure(fixedWindow({ name: 'fixedWindow', limit: 3, windowMs: 1_000 }), { carry: 'used' });
        await live.tryAcquire('k');
        await live.override('vip', fixedWindow({ name: 'fixedWindow', limit: 9, windowMs: 1_000 }));
        await live.tryAcquire('vip');
        // Concurrency slots and a throttle's pause on the same store.
        const slots = concurrencyLimiter({ max: 1, store, prefix: `keys-slots-${calls.length}` });
        const slot = await slots.acquire('job');
        await slot.release();
        const calls2 = throttle({ limiter: aloneOf(alone, 'tokenBucket') });
        await calls2.pause(5, 'provider');
        await calls2.close();
        await Promise.all([policy.close(), ...alone.map((l) => l.close()), slots.close()]);
        await store.close();
      }
      // Leased mode (a bucket and a window) and divided mode (its heartbeat and its reserve).
      for (const rule of [
        tokenBucket({ name: 'tb', capacity: 5, refillPerSecond: 5 }),
        slidingWindowCounter({ name: 'swc', limit: 5, windowMs: 1_000 }),
      ]) {
        const leased = leasedLimiterOn({ rules: rule, redis, prefix: `keys-leased-${rule.kind}` });
        for (let i = 0; i < 8; i++) await leased.tryAcquire('k');
        await leased.reset('k');
        await leased.close();
        const divided = dividedLimiterOn({ rules: rule, redis, prefix: `keys-divided-${rule.kind}`, heartbeatMs: 50 });
        await nextEvent(divided.store, 'membership');
        for (let i = 0; i < 8; i++) await divided.tryAcquire('k');
        await divided.close();
      }
      const smooth = createLimiter({
        rules: smoothBursty({ name: 'sb', permitsPerSecond: 5 }),
        store: redisStore({ redis, failMode: 'closed' }),
        prefix: 'keys-smooth',
      });
      await smooth.tryAcquire('k');
      await smooth.close();
      await smooth.store.close();
    } finally {
      redis.disconnect();
      stop();
    }

    const scripts = await entries(calls);
    const ran = new Set(calls.map((c) => scripts.get(c.call) ?? `not a function: ${c.call}`));
    // Every script of every package ran (so the check below covers it).
    for (const entry of [
      'decide',
      'decide_one',
      'adjust',
      'block',
      'preflight',
      'presence',
      'descriptor',
      'limited_keys',
      'access_list',
      'config_read',
      'config_write',
      'raise_version',
      'carry_key',
      'semaphore',
      'pause',
      'lease',
      'membership',
    ])
      expect(ran, entry).toContain(entry);
    // And none touched a key it was not given.
    const outside: string[] = [];
    let touched = 0;
    for (const { call, keys, inner } of calls) {
      for (const command of inner) {
        for (const key of await keysOf(command)) {
          touched++;
          if (!keys.has(key)) outside.push(`${scripts.get(call) ?? call}: ${command.slice(0, 3).join(' ')}`);
        }
      }
    }
    expect(touched).toBeGreaterThan(100);
    expect([...new Set(outside)]).toEqual([]);
  });
});
