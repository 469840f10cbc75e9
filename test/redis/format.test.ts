/**
 * The Redis state format's version: two versions of sluice sharing one Redis during a rolling deploy never
 * read each other's states as their own. Formats 1 and 2 (the layouts before this one) are written here
 * exactly as they wrote their keys, since their code is gone: format 1 `${prefix}:{${identity}}:${rule name}`
 * holding the algorithm's fields as packed doubles; format 2 `${prefix}{${identity}}${id}`, the id hashed from
 * `sluice/2/` and the rule's name, a window algorithm's count a Redis integer in a key per window (the id and
 * the window's number in hex). Format 3 is the store itself.
 */
import { createHash } from 'node:crypto';
import { type Algorithm, SluiceRangeError, createLimiter, fixedWindow, tokenBucket } from '@sluice/core';
import { stateName } from '@sluice/core/internal';
import { redisStore } from '@sluice/redis';
import calculateSlot from 'cluster-key-slot';
import fc from 'fast-check';
import type { Redis } from 'ioredis';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  banKey,
  banMarkerKey,
  encodeIdentity,
  fleetKey,
  ruleId,
  semaphoreKeys,
  slotTag,
  stateKey,
} from '../../packages/redis/src/key-layout.js';
import { useTestRedis } from '../harness/use-redis.js';

const testRedis = useTestRedis();
let redis: Redis;
beforeAll(() => void ({ redis } = testRedis()));

/** Every name format 1 gave a (prefix, identity, part): a rule's state, or one of its own parts. */
const FORMAT_1_PARTS = [
  '~ban',
  '~holders',
  '~queue',
  '~queue-alive',
  '~nodes',
  '~members',
  '~demands',
  '~summary',
  '~allocations',
];
const format1Key = (prefix: string, key: string, part: string) => `${prefix}:{${encodeIdentity(key)}}:${part}`;

/** A format-1 node that used `used` permits of `rule` on `key` at `nowMs`: its key, as it wrote it. */
async function writeFormat1(
  prefix: string,
  key: string,
  rule: Algorithm,
  used: number,
  nowMs: number,
): Promise<string> {
  let state: unknown;
  for (let i = 0; i < used; i++) state = rule.consume(state as never, nowMs, 1, 0).state;
  const fields = Object.values(state as object) as number[];
  const value = Buffer.alloc(8 * fields.length);
  for (const [i, field] of fields.entries()) value.writeDoubleLE(field, i * 8);
  const name = format1Key(prefix, key, rule.name);
  await redis.set(name, value, 'PX', 600_000);
  return name;
}

/** A format-2 node that used `used` permits of `rule` on `key` at `nowMs`: its key, as it wrote it. */
async function writeFormat2(
  prefix: string,
  key: string,
  rule: Algorithm,
  used: number,
  nowMs: number,
): Promise<string> {
  const id = createHash('sha1').update(`sluice/2/${rule.name}`).digest('base64url').slice(0, 3);
  const base = `${prefix}{${encodeIdentity(key)}}${id}`;
  if (rule.kind === 'fixedWindow') {
    const name = `${base}${Math.floor(nowMs / (rule.params.windowMs as number)).toString(16)}`;
    await redis.set(name, String(used), 'PX', 600_000);
    return name;
  }
  let state: unknown;
  for (let i = 0; i < used; i++) state = rule.consume(state as never, nowMs, 1, 0).state;
  const fields = Object.values(state as object) as number[];
  const value = Buffer.alloc(8 * fields.length);
  for (const [i, field] of fields.entries()) value.writeDoubleLE(field, i * 8);
  await redis.set(base, value, 'PX', 600_000);
  return base;
}

describe('the state format version', () => {
  const prefixArb = fc.stringMatching(/^[A-Za-z0-9_.\-:/]{1,20}$/);
  const ruleNameArb = fc.stringMatching(/^[A-Za-z0-9_.-]{1,64}$/);

  it('no key of this format is ever a format-1 key (states, bans, semaphores, fleets)', () => {
    fc.assert(
      fc.property(prefixArb, fc.string({ maxLength: 12 }), ruleNameArb, (prefix, key, name) => {
        const rules = [
          fixedWindow({ limit: 3, windowMs: 1_000, name }),
          tokenBucket({ capacity: 3, refillPerSecond: 1, name }),
        ];
        const format2 = [
          ...rules.map((rule) => stateKey(prefix, key, stateName(rule))),
          banKey(prefix, key),
          ...semaphoreKeys(prefix, key),
          fleetKey(prefix),
        ];
        const format1 = [...FORMAT_1_PARTS, name].flatMap((part) => [
          format1Key(prefix, key, part),
          format1Key(prefix, prefix, part),
        ]);
        for (const name2 of format2) expect(format1).not.toContain(name2);
        // This format never has ':' right after the hash tag, where format 1 always has it.
        for (const name2 of format2) expect(name2.slice(name2.indexOf('}') + 1).startsWith(':')).toBe(false);
      }),
      { numRuns: 2_000 },
    );
  });

  it('a rule id is the format version and the state name hashed: the same on every node, another in another format', () => {
    const perMinute = stateName(fixedWindow({ limit: 5, windowMs: 60_000, name: 'per-minute' }));
    expect(ruleId(perMinute)).toMatch(/^[A-Za-z0-9_-]{3}$/);
    expect(ruleId(perMinute)).toBe(ruleId(perMinute));
    // A limit is not part of it: a rule keeps its state when its limit changes (live limits rely on it).
    expect(stateKey('api', 'k', stateName(fixedWindow({ limit: 5, windowMs: 60_000, name: 'n' })))).toBe(
      stateKey('api', 'k', stateName(fixedWindow({ limit: 50, windowMs: 60_000, name: 'n' }))),
    );
    // Its kind and what changes its state's meaning are: two versions of the code with another kind (or
    // window) under one name never read each other's state (test/seams/rolling-deploy-kinds.test.ts).
    const named = [
      fixedWindow({ limit: 5, windowMs: 60_000, name: 'n' }),
      fixedWindow({ limit: 5, windowMs: 1_000, name: 'n' }),
      tokenBucket({ capacity: 5, refillPerSecond: 1, name: 'n' }),
    ];
    expect(new Set(named.map((rule) => stateKey('api', 'k', stateName(rule)))).size).toBe(3);
  });

  for (const rule of [
    fixedWindow({ limit: 3, windowMs: 600_000, name: 'per-10m' }),
    tokenBucket({ capacity: 3, refillPerSecond: 0.001, name: 'bucket' }),
  ]) {
    for (const [format, writeOld] of [
      [1, writeFormat1],
      [2, writeFormat2],
    ] as const) {
      it(`${rule.kind}: a node of this format beside a format-${format} node on one Redis: neither reads the other's state, neither writes it`, async () => {
        const prefix = `rolling-${format}-${rule.kind}`;
        const now = Date.now();
        // The older node used the whole limit of key 'k'.
        const old = await writeOld(prefix, 'k', rule, 3, now);
        const oldValue = await redis.getBuffer(old);
        const store = redisStore({ redis, denyCache: false, failMode: 'closed' });
        const limiter = createLimiter({ rules: rule, store, prefix });
        // This node starts from a full limit: it never took the older state as its own.
        for (const remaining of [2, 1, 0]) expect((await limiter.tryAcquire('k')).remaining).toBe(remaining);
        expect((await limiter.tryAcquire('k')).allowed).toBe(false);
        // And it left the older key as it was: the old node goes on reading its own count.
        expect(await redis.getBuffer(old)).toEqual(oldValue);
        expect(await redis.pttl(old)).toBeGreaterThan(500_000);
        // Its own keys are this format's, none of them the older one's.
        const keys = (await redis.keys(`${prefix}*`)).filter((name) => name !== old);
        expect(keys.length).toBeGreaterThan(0);
        for (const name of keys) expect(name.startsWith(`${prefix}:{`)).toBe(false);
        expect(keys).toContain(stateKey(prefix, 'k', stateName(rule)));
        await limiter.reset('k');
        // A reset forgets this format's state only.
        expect(await redis.getBuffer(old)).toEqual(oldValue);
        await store.close();
      });
    }
  }

  it("a slot's ban marker lives in that slot: every slot's tag hashes to it", () => {
    for (let slot = 0; slot < 16_384; slot++) expect(calculateSlot(slotTag(slot))).toBe(slot);
    expect(calculateSlot(banMarkerKey('api', 4_242))).toBe(4_242);
    // Beside a key's ban in its slot, as block.lua and the decide scripts need it.
    const ban = banKey('api', 'user:1');
    expect(calculateSlot(banMarkerKey('api', calculateSlot(ban)))).toBe(calculateSlot(ban));
  });

  it('two rules of one limiter whose ids would meet are refused at creation, naming both', async () => {
    // 18 bits: a pair of names with one id turns up within a few thousand names.
    const byId = new Map<string, string>();
    let pair: [string, string] | undefined;
    const rule = (name: string, limit: number) => fixedWindow({ limit, windowMs: 60_000, name });
    for (let i = 0; pair === undefined; i++) {
      const name = `rule-${i}`;
      const id = ruleId(stateName(rule(name, 1)));
      const other = byId.get(id);
      if (other !== undefined) pair = [other, name];
      else byId.set(id, name);
    }
    const [a, b] = pair;
    const store = redisStore({ redis, failMode: 'closed' });
    const make = () =>
      createLimiter({
        rules: [rule(a, 1), rule(b, 5)],
        store,
        prefix: 'colliding',
      });
    expect(make).toThrow(SluiceRangeError);
    expect(make).toThrow(
      new RegExp(`'${a}' and '${b}'.*share the state id '${ruleId(stateName(rule(a, 1)))}'.*rename one`),
    );
    await store.close();
  });
});
