/**
 * Live limits in leased mode: the configuration is the one exact mode keeps in Redis (see
 * test/redis/live-limits.test.ts); a lease reads its slot's version, so a node switches at its next lease
 * after another node's change (or at once, hearing the change announced on the limiter's channel), letting go
 * of what it held under the old rules and never topping it up. Two nodes on one Redis, standalone and
 * Cluster: after a change to a lower limit the window never holds more than the new limit; an override and
 * its removal alike.
 */
import type { Decision, Limiter } from '@sluice/core';
import { type LeasedStore, leasedStore } from '@sluice/hybrid';
import { describe, expect, it } from 'vitest';
import { type TwoNodes, liveBucket, liveDeployments, withTwoNodes } from '../harness/live-nodes.js';
import { useTestCluster, useTestRedis } from '../harness/use-redis.js';

const testRedis = useTestRedis();
const testCluster = useTestCluster();

/** `count` single-permit decisions for `key`, 8 at a time (demand enough for leases), and what they said. */
async function decide(limiter: Limiter, key: string, count: number): Promise<Decision[]> {
  const decisions: Decision[] = [];
  for (let i = 0; i < count; i += 8) {
    const batch = Array.from({ length: Math.min(8, count - i) }, () => limiter.tryAcquire(key));
    decisions.push(...(await Promise.all(batch)));
  }
  return decisions;
}

const granted = (decisions: readonly Decision[]) => decisions.filter((d) => d.allowed).length;

const deployments = liveDeployments(testRedis, testCluster);

describe.each(deployments)('leased mode on a $name server', ({ open }) => {
  /** Two leased nodes of a limiter of liveBucket(capacity). */
  const onTwoNodes = (capacity: number, body: (nodes: TwoNodes<LeasedStore>) => Promise<void>) =>
    withTwoNodes(open, (redis) => leasedStore({ redis }), liveBucket(capacity), body);

  it('a change to a lower limit: the other node hears it, lets go of its old lease, and the fleet never admits past the new limit', async () => {
    await onTwoNodes(1_000, async ({ a, b, stores }) => {
      const before = granted(await decide(a, 'k', 100)) + granted(await decide(b, 'k', 100));
      expect(before).toBe(200);
      const heard = new Promise((resolve) => stores[1].once('reconfigured', resolve));
      await a.reconfigure(liveBucket(300));
      await heard;
      const after = [...(await decide(b, 'k', 400)), ...(await decide(a, 'k', 400))];
      // Both held leases under the old rules (debited in Redis, so counted as used by the carry); b let go of
      // its own when it heard the change: the window holds no more than the lower limit, 300.
      expect(after.filter((d) => d.allowed).every((d) => d.configVersion === 2 && d.limit === 300)).toBe(true);
      expect(before + granted(after)).toBeLessThanOrEqual(300);
      expect(granted(after)).toBeGreaterThan(0);
      expect([a.configVersion, b.configVersion]).toEqual([2, 2]);
    });
  });

  it("a node that has not leased since another's change resets the key under the new rules", async () => {
    await onTwoNodes(100, async ({ a, b }) => {
      expect(granted(await decide(a, 'k', 100))).toBe(100);
      await a.reconfigure(liveBucket(200));
      await b.reset('k');
      expect(b.configVersion).toBe(2);
      expect(granted(await decide(a, 'k', 300))).toBe(200);
    });
  });

  it('an override on one node holds on the other from its next lease; removed, the key returns to the limiter with what it used', async () => {
    await onTwoNodes(100, async ({ a, b }) => {
      expect(granted(await decide(a, 'acme', 60))).toBe(60);
      await a.override('acme', liveBucket(300));
      const owned = await decide(b, 'acme', 400);
      // Under the override from b's next lease: more than the 40 the limiter's 100 left, never over 300 in all.
      const byOverride = owned.filter((d) => d.override === true);
      expect(byOverride.length).toBeGreaterThan(0);
      expect(byOverride.every((d) => d.limit === 300)).toBe(true);
      expect(granted(owned)).toBeGreaterThan(40);
      expect(60 + granted(owned)).toBeLessThanOrEqual(300);
      expect((await b.overrides()).overrides.map((o) => o.key)).toEqual(['acme']);
      await b.removeOverride('acme');
      // Back to the limiter's 100 with more than 100 used: nothing more, on either node.
      const back = [...(await decide(a, 'acme', 50)), ...(await decide(b, 'acme', 50))];
      expect(granted(back)).toBe(0);
      expect(back.some((d) => d.override === true)).toBe(false);
      // Other keys never changed.
      expect(granted(await decide(b, 'other', 100))).toBe(100);
    });
  });
});
