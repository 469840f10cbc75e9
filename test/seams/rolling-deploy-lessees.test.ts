/**
 * A rolling deploy across e4d611fd, which renamed a leased key's lessees from `lessees~${state}` to
 * `lessees~lease~${state}` (and a reserve's from `reserve-lessees~${state}` to `lessees~reserve~${state}`).
 * While both versions run, the old nodes count themselves in the old set and the new ones in the new: each
 * node sees only its own version's lessees, so a lease's hoarding cap (burst / (4 x live lessees)) is as if
 * the other version's nodes were not there. Never over the limit (the central state is one), but a node may
 * hoard, and strand on close or death, a larger part of the burst than the cap allows. Accepted before the
 * first release (docs/redis-format.md says so); this test holds the part that must hold: the limit.
 */
import { fixedWindow } from '@sluice/core';
import { stateName } from '@sluice/core/internal';
import { engineOnConnection, stateKey, toConnection } from '@sluice/redis/internal';
import { expect, it } from 'vitest';
import { leaseShape } from '../../packages/hybrid/src/lease-client.js';
import { leaseByScript } from '../harness/lease-script.js';
import { useTestRedis } from '../harness/use-redis.js';

const redis = useTestRedis();

it('a rolling deploy across the rename never leases past the limit: both versions take from one central state', async () => {
  const rule = fixedWindow({ name: 'fw', limit: 100, windowMs: 3_600_000 });
  const prefix = `lessees-rename-${Date.now()}`;
  const state = `lease~${stateName(rule)}`;
  const connection = toConnection(redis().redis);
  const engine = engineOnConnection(connection, undefined);
  const now = Date.UTC(2026, 0, 15, 3, 30);
  let granted = 0;
  for (let round = 0; round < 12; round++) {
    // The old version's leased node (9f01430: lesseesName `lessees~${stateName(rule)}`), as its binding called lease.lua.
    const old = await leaseByScript(connection, {
      stateKey: stateKey(prefix, 'k', state),
      lesseesKey: stateKey(prefix, 'k', `lessees~${stateName(rule)}`),
      shape: leaseShape(rule),
      want: 30,
      nodeId: 'old-node',
      liveMs: 30_000,
      nowMs: now + 2 * round,
      hoardingDivisor: 4,
    });
    // The new version's node leases the same key through the engine, as CentralLeases does.
    const answer = await engine.lease(
      { prefix, rules: [rule], states: [state], version: undefined },
      { key: 'k', want: 30, node: 'new-node', liveMs: 30_000, hoardingDivisor: 4, register: true },
      now + 2 * round + 1,
    );
    expect('stale' in answer).toBe(false);
    if ('stale' in answer) return;
    // Each version counts its own lessees while both run (the hoarding cap is looser, the limit is not).
    expect(answer.lessees).toBe(1);
    granted += old.granted + answer.granted;
  }
  expect(granted).toBe(100);
});
