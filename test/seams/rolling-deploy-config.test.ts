/**
 * Live limits x a rolling deploy: two versions of a limiter's code on one Redis at once, their rules in code
 * different (the old 100, the new 50), in every mode. Which configuration wins: the stored one, once any node
 * changed it (limiter.reconfigure) — a node of either version decides under it from its start (ready) or its
 * next decision, whatever its code says; before any change, each version decides under its own code's rules
 * (nothing is stored to agree on; docs/redis-format.md, "Versions and rolling deploys"). Every node agrees on
 * one configuration, a change from a node of either version is everyone's, and a fresh key's count over the
 * fleet never passes the configuration in force.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LIVE_MODES, LiveFleet, grants, learns } from '../harness/live-fleet.js';
import { livePrefix } from '../harness/live-nodes.js';
import { type TestRedis, spawnRedisServer } from '../harness/redis-server.js';

let server: TestRedis | undefined;
const fleet = new LiveFleet(() => new Redis((server as TestRedis).url));
beforeAll(async () => {
  server = await spawnRedisServer();
});
afterAll(async () => {
  await fleet.close();
  await server?.stop();
});

describe.each(LIVE_MODES)('$mode mode: two versions of the code on one Redis', ({ mode, rule, store }) => {
  it("an old node's change is in force on the new version's nodes from their start, whatever their code says; a new node's change is everyone's", async () => {
    const prefix = livePrefix();
    const old = [await fleet.node(prefix, rule(100), store), await fleet.node(prefix, rule(100), store)] as const;
    const eighty = await old[0].limiter.reconfigure(rule(80));
    // The deploy: nodes of the new code (50 in code) start while the old ones run.
    const fresh = [await fleet.node(prefix, rule(50), store), await fleet.node(prefix, rule(50), store)] as const;
    const all = [...old, ...fresh];
    for (const n of all) await learns(n, eighty.version);
    expect(all.map((n) => [n.limiter.configVersion, n.limiter.rules[0]?.limit])).toEqual(
      all.map(() => [eighty.version, 80]),
    );
    let total = 0;
    for (const n of all) total += await grants(n.limiter, 'z', 30);
    if (mode === 'exact') expect(total).toBe(80);
    else expect(total).toBeLessThanOrEqual(80);

    const sixty = await fresh[1].limiter.reconfigure(rule(60));
    for (const n of all) await learns(n, sixty.version);
    expect(all.map((n) => [n.limiter.configVersion, n.limiter.rules[0]?.limit])).toEqual(
      all.map(() => [sixty.version, 60]),
    );
    let after = 0;
    for (const n of all) after += await grants(n.limiter, 'y', 30);
    if (mode === 'exact') expect(after).toBe(60);
    else expect(after).toBeLessThanOrEqual(60);
  });

  it('before any change each version decides under its own code; the first change, from either version, is in force on both', async () => {
    const prefix = livePrefix();
    const old = await fleet.node(prefix, rule(100), store);
    const fresh = await fleet.node(prefix, rule(50), store);
    expect([old.limiter.configVersion, old.limiter.rules[0]?.limit]).toEqual([1, 100]);
    expect([fresh.limiter.configVersion, fresh.limiter.rules[0]?.limit]).toEqual([1, 50]);
    const seventy = await fresh.limiter.reconfigure(rule(70));
    for (const n of [old, fresh]) await learns(n, seventy.version);
    expect([old, fresh].map((n) => [n.limiter.configVersion, n.limiter.rules[0]?.limit])).toEqual([
      [seventy.version, 70],
      [seventy.version, 70],
    ]);
    const total = (await grants(old.limiter, 'x', 50)) + (await grants(fresh.limiter, 'x', 50));
    if (mode === 'exact') expect(total).toBe(70);
    else expect(total).toBeLessThanOrEqual(70);
  });
});
