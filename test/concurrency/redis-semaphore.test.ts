/**
 * The distributed semaphore on real Redis: several processes on one key never more than max inside
 * (counted by an independent Redis counter), a holder killed with -9 whose slots free within leaseMs plus a
 * renewal, a holder paused past its lease that learns on resuming it lost its slot (and whose release frees
 * nobody else's), Redis killed and restarted by failMode, first come first served, a Cluster with hostile
 * keys, and bad options.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { type Slot, SluiceRangeError, concurrencyLimiter } from '@sluice/core';
import { redisStore } from '@sluice/redis';
import { semaphoreKeys } from '../../packages/redis/src/key-layout.js';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { spawnRedisServer } from '../harness/redis-server.js';
import { nextEvent, until } from '../harness/events.js';
import { useTestCluster, useTestRedis } from '../harness/use-redis.js';

const child = fileURLToPath(new URL('./semaphore-child.ts', import.meta.url));
const testRedis = useTestRedis();
let n = 0;
const prefix = () => `sem${Date.now()}-${++n}`;
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) c.kill('SIGKILL');
});

interface Running {
  readonly process: ChildProcess;
  waitFor(text: string): Promise<void>;
  result(): Promise<Record<string, number>>;
}

function startChild(env: Record<string, string>): Running {
  const p = spawn(process.execPath, ['--conditions=sluice-source', '--import', 'tsx', child], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(p);
  let out = '';
  const waiting = new Set<() => void>();
  p.stdout?.on('data', (chunk: Buffer) => {
    out += chunk.toString();
    for (const w of waiting) w();
  });
  p.stderr?.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => p.once('exit', resolve));
  return {
    process: p,
    waitFor: (text) =>
      new Promise((resolve, reject) => {
        const check = () => {
          if (!out.includes(text)) return;
          waiting.delete(check);
          resolve();
        };
        waiting.add(check);
        check();
        void exited.then(() => reject(new Error(`exited before "${text}":\n${out}`)));
      }),
    result: async () => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const code = await Promise.race([
        exited,
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no result within 60 s:\n${out}`)), 60_000);
        }),
      ]).finally(() => clearTimeout(timer));
      const line = out.split('\n').find((l) => l.startsWith('SLUICE-RESULT '));
      if (code !== 0 || line === undefined) throw new Error(`child failed (${code}):\n${out}`);
      return JSON.parse(line.slice('SLUICE-RESULT '.length)) as Record<string, number>;
    },
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('a fleet of processes on one key', () => {
  it.each([3, 8])(
    '%i processes x 20 callers, max 10: never more than 10 inside (an independent counter), throughput near max ' +
      '/ job time',
    async (processes) => {
      const { server, redis } = testRedis();
      const p = prefix();
      const jobs = 3;
      const jobMs = 50;
      const env = {
        REDIS_URL: server.url,
        PREFIX: p,
        MAX: '10',
        CALLERS: '20',
        JOBS: String(jobs),
        JOB_MS: String(jobMs),
        COUNTER: `${p}:inside`,
        START_AT: String(Date.now() + 2_500 + 400 * processes),
      };
      const fleet = Array.from({ length: processes }, () => startChild(env));
      const results = await Promise.all(fleet.map((f) => f.result()));
      const entries = results.reduce((s, r) => s + (r.entries as number), 0);
      const over = results.reduce((s, r) => s + (r.over as number), 0);
      const worst = Math.max(...results.map((r) => r.worst as number));
      const elapsed = Math.max(...results.map((r) => r.elapsedMs as number));
      const ideal = (entries * jobMs) / 10;
      console.info(
        `${processes} processes x 20 callers, max 10, ${jobMs} ms jobs: ${entries} jobs, at most ${worst} ` +
          `inside, ${over} over; ${elapsed} ms against ${ideal} ms ideal (${((ideal / elapsed) * 100).toFixed(0)}% ` +
          `of max / job time)`,
      );
      expect(entries).toBe(processes * 20 * jobs);
      expect(over).toBe(0);
      expect(worst).toBeLessThanOrEqual(10);
      expect(await redis.get(`${p}:inside`)).toBe('0');
    },
  );
});

describe('crashed and paused holders', () => {
  /**
   * A child process holding all `max` slots of key 'job' on a fresh prefix, and this process's limiter on
   * the same slots (and what closes it).
   */
  async function heldElsewhere(max: number, leaseMs: number) {
    const { server, redis } = testRedis();
    const p = prefix();
    const holder = startChild({
      REDIS_URL: server.url,
      PREFIX: p,
      MAX: String(max),
      MODE: 'hold',
      HOLD: String(max),
      LEASE_MS: String(leaseMs),
    });
    await holder.waitFor('HOLDING');
    const store = redisStore({ redis });
    const limiter = concurrencyLimiter({ max, store, prefix: p, leaseMs });
    const close = async () => {
      await limiter.close();
      await store.close();
    };
    return { holder, limiter, redis, holders: semaphoreKeys(p, 'job')[0], close };
  }
  const acquireAll = (limiter: ReturnType<typeof concurrencyLimiter>, n: number, maxWaitMs: number) =>
    Promise.all(Array.from({ length: n }, () => limiter.acquire('job', { maxWaitMs })));

  it('kill -9 of a holder: its slots free within leaseMs plus one renewal interval', async () => {
    const leaseMs = 1_500;
    const { holder, limiter, close } = await heldElsewhere(3, leaseMs);
    expect(await limiter.tryAcquire('job')).toBeUndefined();
    holder.process.kill('SIGKILL');
    const killedAt = performance.now();
    const slots = await acquireAll(limiter, 3, 30_000);
    const tookMs = performance.now() - killedAt;
    console.info(
      `kill -9 of a holder of 3 slots (leaseMs ${leaseMs}): all 3 free again after ${tookMs.toFixed(0)} ms ` +
        `(bound: leaseMs + leaseMs / 3 = ${leaseMs + leaseMs / 3} ms)`,
    );
    // Generous: a loaded machine may start the waiters' retry late; only a slot that never frees breaks it.
    expect(tookMs).toBeLessThan(leaseMs + leaseMs / 3 + 3_000);
    for (const slot of slots) await slot.release();
    await close();
  });

  it('SIGSTOP past the lease: another takes the slot; the resumed holder learns it lost it, and its release frees nobody else', async () => {
    const leaseMs = 1_200;
    const { holder, limiter, redis, holders, close } = await heldElsewhere(2, leaseMs);
    holder.process.kill('SIGSTOP');
    const mine = await acquireAll(limiter, 2, 20_000);
    await sleep(leaseMs); // a pause well past the lease, whenever the holder last renewed
    holder.process.kill('SIGCONT');
    const reported = await holder.result();
    expect(reported).toEqual({ lost: 2, aborted: 2 });
    // The resumed holder released its lost slots: ours are still ours.
    expect(await limiter.tryAcquire('job')).toBeUndefined();
    expect(await redis.zcard(holders)).toBe(2);
    expect(mine.every((s) => !s.lost)).toBe(true);
    for (const slot of mine) await slot.release();
    await close();
  });
});

describe('on one Redis, as in memory', () => {
  it('first come, first served; a try never passes a waiter; a held slot is renewed past its lease', async () => {
    const { redis } = testRedis();
    const store = redisStore({ redis });
    const limiter = concurrencyLimiter({ max: 1, store, prefix: prefix(), leaseMs: 600 });
    const first = await limiter.acquire('k');
    const order: number[] = [];
    const waiters = [1, 2, 3].map((i) =>
      limiter.acquire('k').then((slot) => {
        order.push(i);
        return slot;
      }),
    );
    await sleep(1_500); // past two leases: renewed, the waiters still wait
    expect(first.lost).toBe(false);
    expect(await limiter.tryAcquire('k')).toBeUndefined();
    await first.release();
    for (const w of waiters) await (await w).release();
    expect(order).toEqual([1, 2, 3]);
    await limiter.close();
    await store.close();
  });

  it('first come, first served across nodes: two stores on their own connections, waiters interleaved, served in arrival order', async () => {
    const { server } = testRedis();
    const p = prefix();
    const nodes = [new Redis(server.url), new Redis(server.url)];
    const stores = nodes.map((redis) => redisStore({ redis }));
    const limiters = stores.map((store) => concurrencyLimiter({ max: 1, store, prefix: p }));
    const [a, b] = limiters as [ReturnType<typeof concurrencyLimiter>, ReturnType<typeof concurrencyLimiter>];
    const holder = await a.acquire('k');
    const order: string[] = [];
    const waiters: Array<Promise<unknown>> = [];
    for (let i = 0; i < 6; i++) {
      const node = i % 2 === 0 ? a : b;
      const name = `${i % 2 === 0 ? 'a' : 'b'}${i}`;
      waiters.push(
        node.acquire('k', { maxWaitMs: 10_000 }).then(async (slot) => {
          order.push(name);
          await sleep(20);
          await slot.release();
        }),
      );
      // The next arrives once this one holds its place in the shared queue, so their order is known.
      await until(() => node.waiting('k') === Math.floor(i / 2) + 1, `${name} queued`);
    }
    await holder.release();
    await Promise.all(waiters);
    expect(order).toEqual(['a0', 'b1', 'a2', 'b3', 'a4', 'b5']);
    for (const l of limiters) await l.close();
    for (const s of stores) await s.close();
    for (const r of nodes) r.disconnect();
  });

  it('leaseMs must leave room to renew: at least 4 x the store timeoutMs', async () => {
    const { redis } = testRedis();
    const store = redisStore({ redis, timeoutMs: 200 });
    expect(() => concurrencyLimiter({ max: 1, store, leaseMs: 500 })).toThrow(SluiceRangeError);
    expect(() => concurrencyLimiter({ max: 1, store, leaseMs: 500 })).toThrow(
      /at least 4 x the store's timeoutMs \(800 ms\)/,
    );
    await store.close();
  });
});

describe('Redis killed and restarted, by failMode', () => {
  it.each(['local', 'open', 'closed'] as const)(
    '%s: answers within the deadline, only typed errors, back on Redis after',
    async (failMode) => {
      const server = await spawnRedisServer();
      const redis = new Redis({ port: server.port, maxRetriesPerRequest: 1, retryStrategy: () => 50 });
      redis.on('error', () => {});
      const store = redisStore({ redis, failMode, timeoutMs: 100 });
      const p = prefix();
      // 'local' holds this node's share of the slots: all 4, once Redis has counted a fleet of one, the slot it
      // already holds on Redis among them (that caller is still inside).
      const counted = failMode === 'local' ? nextEvent(store, 'fleet') : undefined;
      const limiter = concurrencyLimiter({ max: 4, store, prefix: p, leaseMs: 1_000 });
      const before = await limiter.acquire('k');
      await counted;
      const port = server.port;
      await server.stop();
      const started = performance.now();
      const answers: string[] = [];
      const held: Slot[] = [];
      for (let i = 0; i < 5; i++) {
        await limiter.acquire('k', { maxWaitMs: 300 }).then(
          (slot) => {
            held.push(slot);
            answers.push('slot');
          },
          (e: { code?: string }) => answers.push(String(e.code)),
        );
      }
      const tookMs = performance.now() - started;
      console.info(`${failMode} with Redis down: ${answers.join(', ')} in ${tookMs.toFixed(0)} ms`);
      expect(tookMs).toBeLessThan(5_000);
      expect(answers).toEqual(
        failMode === 'open'
          ? Array(5).fill('slot')
          : failMode === 'closed'
            ? Array(5).fill('STORE_UNAVAILABLE')
            : ['slot', 'slot', 'slot', 'WAIT_EXPIRED', 'WAIT_EXPIRED'],
      );
      await before.release(); // the store could not be told: its lease frees it
      for (const slot of held) await slot.release();
      const recovered = nextEvent(store, 'store-recovered');
      const restarted = await spawnRedisServer([], { port });
      await recovered;
      // Back on Redis: the slots it counts again are Redis's.
      const back = await limiter.acquire('k', { maxWaitMs: 3_000 });
      expect(await redis.zcard(semaphoreKeys(p, 'k')[0])).toBeGreaterThanOrEqual(1);
      await back.release();
      await limiter.close();
      await store.close();
      redis.disconnect();
      await restarted.stop();
    },
  );
});

describe('on a Cluster', () => {
  const cluster = useTestCluster();
  it('hostile keys: each key its own slots, in its own slot', async () => {
    const store = redisStore({ redis: cluster().client, timeoutMs: 5_000 });
    const limiter = concurrencyLimiter({ max: 2, store, prefix: prefix(), leaseMs: 30_000 });
    for (const key of ['}', '{', '{}', 'a{b}c', '%7B', 'user:1']) {
      const a = await limiter.acquire(key);
      const b = await limiter.acquire(key);
      expect(await limiter.tryAcquire(key), key).toBeUndefined();
      await a.release();
      const c = await limiter.acquire(key, { maxWaitMs: 2_000 });
      await b.release();
      await c.release();
    }
    await limiter.close();
    await store.close();
  });
});
