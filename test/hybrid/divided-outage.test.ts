/**
 * Divided mode through a Redis outage, one node on a redis-server of its own that is killed (SIGKILL) and
 * started again empty on its port:
 * - the node is back in the new Redis's membership as soon as its client reconnects, not at its next
 *   heartbeat (before: after a 30 s outage ioredis's backoff had grown to 2 s and each heartbeat waited in the
 *   client's queue past the interval, so 1,000 nodes were whole again 2.06 heartbeats after Redis returned);
 * - while Redis is away a node holds its part of the reserve here (before: a 1,000-node fleet whose shares
 *   were under LEAST_HELD admitted nothing for 30 s), its keys starting spent, never past its allocation; on
 *   Redis's return what it granted is charged to the reserve, so the fleet pays it back.
 */
import { ManualClock, tokenBucket } from '@sluice/core';
import type { DividedStore } from '@sluice/hybrid';
import type { FallbackChargedEvent } from '@sluice/redis';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { membershipKeys } from '@sluice/redis/internal';
import { nextEvent, untilAsync } from '../harness/events.js';
import { dividedLimiterOn, type OwnedLimiter } from '../harness/hybrid.js';
import { type TestRedis, spawnRedisServer } from '../harness/redis-server.js';
import { admitted } from './admitted.js';

const RULE = tokenBucket({ capacity: 100, refillPerSecond: 10 });
let server: TestRedis | undefined;
const clients: Redis[] = [];
const limiters: OwnedLimiter<DividedStore>[] = [];

afterEach(async () => {
  for (const limiter of limiters.splice(0)) await limiter.close();
  for (const client of clients.splice(0)) client.disconnect();
  await server?.stop();
  server = undefined;
});

function client(port: number): Redis {
  const c = new Redis({ port, maxRetriesPerRequest: 1 });
  clients.push(c);
  return c;
}

/** One node alone in a new fleet on its own server: it founded the fleet, so it holds its whole allocation. */
async function loneNode(o: { reserve: number; clock?: ManualClock }) {
  server = await spawnRedisServer();
  const redis = client(server.port);
  const node = dividedLimiterOn({
    rules: RULE,
    redis,
    prefix: 'outage',
    nodeId: 'a',
    // No heartbeat falls due during a test: every one it sees is its first, or one its client's 'ready' asked for.
    heartbeatMs: 60_000,
    // A fleet of one, as its founder expects: its whole allocation from the first division.
    assumedNodes: 1,
    reserve: o.reserve,
    ...(o.clock === undefined ? {} : { clock: o.clock }),
  });
  limiters.push(node);
  return { node, port: server.port, redis };
}

async function restart(port: number): Promise<void> {
  server = await spawnRedisServer([], { port });
}

describe('divided mode through a Redis outage', () => {
  it("is back in the new Redis's membership once its client reconnects, not at its next heartbeat", async () => {
    const { node, port, redis } = await loneNode({ reserve: 0 });
    const [members] = membershipKeys('outage', RULE.name);
    await untilAsync(async () => (await redis.zcard(members)) === 1, 'the first heartbeat');
    server?.process?.kill('SIGKILL');
    await nextEvent(redis, 'error');
    await restart(port);
    const admin = client(port);
    // The next heartbeat is 60 s away: only the client's 'ready' can bring the node back this soon.
    await untilAsync(async () => (await admin.zcard(members)) === 1, 'the node in the new membership');
    expect(node.store.nodeId).toBe('a');
  });

  it('while Redis is away holds its part of the reserve, starting spent; on return its grants are charged to the reserve', async () => {
    const clock = new ManualClock(0);
    const { node, port } = await loneNode({ reserve: 0.5, clock });
    // Alone in a new fleet: its share is half the bucket (50), the reserve the other half.
    expect(await admitted(node, 'k', 50)).toBe(50);
    // The client's lost connection tells the node at once (no request has to fail first).
    const failed = nextEvent(node.store, 'store-error');
    server?.process?.kill('SIGKILL');
    await failed;
    // Its part of the reserve starts spent here (the reserve's state in Redis is unknown): nothing yet.
    expect(await admitted(node, 'k', 10)).toBe(0);
    // 2 s refill 10 permits of its share (5/s) and 10 of its part of the reserve (5/s): never past its whole
    // allocation (10/s).
    clock.advance(2_000);
    const decisions = await Promise.all(Array.from({ length: 40 }, () => node.tryAcquire('k')));
    const allowed = decisions.filter((d) => d.allowed);
    expect(allowed).toHaveLength(20);
    expect(allowed.filter((d) => d.source === 'fallback')).toHaveLength(10);
    // Redis returns empty: the 10 granted of the reserve's part are charged to the new reserve.
    const charged = nextEvent<[FallbackChargedEvent]>(node.store, 'fallback-charged');
    await restart(port);
    const [event] = await charged;
    expect(event).toEqual({ prefix: 'outage', keys: 1, permits: 10, kept: 0 });
    // The reserve (50 in a new Redis) gave 10 to the outage: 40 are left to draw, the share holds none.
    // The reserve in the new Redis (its fraction in the fleet's new division) gave 10 to the outage; the share
    // holds none left: what the node draws now is the rest.
    const summary = membershipKeys('outage', RULE.name)[2];
    const reserve = Number(await client(port).hget(summary, 'reserve'));
    expect(reserve).toBe(0.5);
    expect(await admitted(node, 'k', 100)).toBe(Math.floor(RULE.burst * reserve + 1e-9) - 10);
  });
});
