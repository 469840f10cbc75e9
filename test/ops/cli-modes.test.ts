/**
 * The sluice CLI against running leased and divided limiters (in this process, on a throwaway Redis): each
 * mode's limiters write down their mode and rules as they start, so the read commands work on them as on
 * exact mode's. Before (c132e5b) only exact mode wrote it: `top`, `lists` and `inspect` answered exit 3 "no
 * limiter ... has run" for a running leased or divided limiter, while `allow` and `deny` wrote to it with
 * `--force`. `inspect` of a leased key reads its central state (what the fleet has left to lease); of a
 * divided key it prints the rules in force and says each node counts in its own memory.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { type Limiter, type Store, createLimiter, tokenBucket } from '@sluice/core';
import { runCli } from '@sluice/cli';
import { dividedStore, leasedStore } from '@sluice/hybrid';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { livePrefix } from '../harness/live-nodes.js';
import { useTestRedis } from '../harness/use-redis.js';

const testRedis = useTestRedis();

/** The CLI run in this process: its exit code and what it printed. */
async function cli(...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, { out: (l) => out.push(l), err: (l) => err.push(l), env: {} });
  return { code, out, err };
}

/** The real command, as a terminal runs it. */
function bin(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const script = fileURLToPath(new URL('../../packages/cli/bin/sluice.mjs', import.meta.url));
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--conditions=sluice-source', '--import', 'tsx', script, ...args]);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** A running limiter of 10 (a bucket refilling one token in 1,000 s) on `make`'s store, ready; closed after `body`. */
async function running(
  make: (redis: Redis) => Store,
  body: (limiter: Limiter, prefix: string, url: string) => Promise<void>,
): Promise<void> {
  const url = testRedis().server.url;
  const redis = new Redis(url);
  const store = make(redis);
  const prefix = livePrefix();
  const limiter = createLimiter({
    rules: tokenBucket({ name: 'api', capacity: 10, refillPerSecond: 0.001 }),
    store,
    prefix,
    limitedKeys: { clearKeys: true },
  });
  try {
    await limiter.ready();
    await body(limiter, prefix, url);
  } finally {
    await limiter.close();
    await (store as { close?: () => Promise<void> }).close?.();
    redis.disconnect();
  }
}

describe.each([
  { mode: 'leased', make: (redis: Redis) => leasedStore({ redis }) },
  { mode: 'divided', make: (redis: Redis) => dividedStore({ redis }) },
])('the sluice command on a running $mode limiter', ({ mode, make }) => {
  it('top and lists read it; allow and deny write to it without --force', async () => {
    await running(make, async (limiter, prefix, url) => {
      for (let i = 0; i < 15; i++) await limiter.tryAcquire('hot');
      await limiter.flushLimitedKeys();
      const top = await cli('top', '--prefix', prefix, '--url', url, '--clear-keys', '--json');
      expect(top).toMatchObject({ code: 0, err: [] });
      const rows = JSON.parse(top.out[0] as string).keys as Array<{ key: string; denied: number }>;
      expect(rows.map((row) => row.key)).toEqual(['hot']);
      expect(rows[0]?.denied).toBeGreaterThan(0);
      expect(await cli('deny', 'user:9', '--prefix', prefix, '--url', url)).toMatchObject({ code: 0 });
      expect(await cli('allow', '203.0.113.0/24', '--prefix', prefix, '--url', url)).toMatchObject({ code: 0 });
      const lists = await cli('lists', '--prefix', prefix, '--url', url, '--json');
      expect(lists.code).toBe(0);
      const entries = JSON.parse(lists.out[0] as string).entries as Array<{ list: string; entry: string }>;
      expect(entries.map((e) => [e.list, e.entry])).toEqual([
        ['allow', '203.0.113.0/24'],
        ['deny', 'user:9'],
      ]);
    });
  });

  it('inspect, from the real command, reads what the mode keeps in Redis', async () => {
    await running(make, async (limiter, prefix, url) => {
      for (let i = 0; i < 4; i++) await limiter.tryAcquire('user:1');
      const inspected = await bin(['inspect', 'user:1', '--prefix', prefix, '--url', url, '--json']);
      expect(inspected).toMatchObject({ code: 0, stderr: '' });
      const read = JSON.parse(inspected.stdout);
      if (mode === 'leased') {
        // A key too cold for a lease is decided on its central state: 4 of 10 used there.
        expect(read.decision).toMatchObject({ allowed: true, limit: 10, remaining: 6 });
      } else {
        expect(read).toMatchObject({ mode: 'divided', configVersion: 1, rules: [{ name: 'api', limit: 10 }] });
        expect(read.counts).toMatch(/each node in its own memory/);
      }
      const text = await cli('inspect', 'user:1', '--prefix', prefix, '--url', url);
      expect(text.code).toBe(0);
      expect(text.out[0]).toBe('key         user:1');
    });
  });
});

describe('the key actions on a running divided limiter', () => {
  it('are refused as a usage error saying where the counts are', async () => {
    await running(
      (redis) => dividedStore({ redis }),
      async (_limiter, prefix, url) => {
        const reset = await cli('reset', 'user:1', '--prefix', prefix, '--url', url);
        expect(reset.code).toBe(2);
        expect(reset.err[0]).toMatch(/runs in divided mode: each node counts its keys in its own memory/);
      },
    );
  });
});
