/**
 * Live limits: a decision is sent under the configuration version it was asked under, not the one in force
 * when its batch leaves. A node that learns of an override while its earlier requests for that key still
 * wait in the batch (routed to the limiter's rules) must not have them decided under those rules at the new
 * version: the slot answers them stale and they are asked again under the override (found on leased mode,
 * where 6 such requests were granted on top of the override's limit).
 */
import { systemClock, tokenBucket } from '@sluice/core';
import { toConnection } from '@sluice/redis/internal';
import { describe, expect, it } from 'vitest';
import { versionKey } from '../../packages/redis/src/key-layout.js';
import { type Answer, type Asked, DecisionTransport } from '../../packages/redis/src/exact/transport.js';
import { useTestRedis } from '../harness/use-redis.js';

const testRedis = useTestRedis();
let n = 0;

/** A transport of one token bucket under a fresh prefix whose version `holder.version` says, and what it heard. */
function transportAt(holder: { version: number }) {
  const { redis } = testRedis();
  const prefix = `transport-version-${process.pid}-${++n}`;
  const heard = new Map<string, string>();
  const settled = new Map<string, () => void>();
  const done = (asked: Asked, what: string) => {
    heard.set(asked.key, what);
    settled.get(asked.key)?.();
  };
  const transport = new DecisionTransport(
    {
      connection: toConnection(redis),
      rules: [tokenBucket({ name: 'api', capacity: 100, refillPerSecond: 1 })],
      prefix,
      stateName: (rule) => rule.name,
      maxBatch: 64,
      timeoutMs: 2_000,
      localClock: systemClock,
      maxClockSkewMs: undefined,
      mayCall: () => true,
      version: () => holder.version,
    },
    {
      answered: (asked: Asked, answer: Answer) => done(asked, answer.decision.allowed ? 'granted' : 'denied'),
      failed: (asked: Asked, error: unknown) => done(asked, `failed: ${String(error)}`),
      unsent: (asked: Asked) => done(asked, 'unsent'),
      stale: (asked: Asked, version: number) => done(asked, `stale ${version}`),
    },
  );
  /** Asks for `key` now; resolves once the transport heard back about it. */
  const ask = (key: string): Promise<void> => {
    const answered = new Promise<void>((resolve) => settled.set(key, resolve));
    transport.send({ key, permits: 1, maxWaitMs: 0, now: Number.NaN, peek: false });
    return answered;
  };
  return { prefix, redis, heard, ask };
}

describe('the decision transport with versions checked', () => {
  it('requests queued under version 1 leave under it after the node moves to version 2: stale, never decided', async () => {
    const holder = { version: 1 };
    const { prefix, redis, heard, ask } = transportAt(holder);
    await redis.set(versionKey(prefix, undefined), '2');
    // The first leaves at once; the others wait for the end of the turn (a call is in flight).
    const asked = [ask('a'), ask('b'), ask('c')];
    // The node learns version 2 (as LiveBinding's #adopt moves a binding whose rules stayed) before they leave.
    holder.version = 2;
    await Promise.all(asked);
    expect(Object.fromEntries(heard)).toEqual({ a: 'stale 2', b: 'stale 2', c: 'stale 2' });
  });

  it('a request asked under the new version while older ones wait leaves apart from them, under its own', async () => {
    const holder = { version: 1 };
    const { prefix, redis, heard, ask } = transportAt(holder);
    await redis.set(versionKey(prefix, undefined), '2');
    const older = [ask('a'), ask('b')];
    holder.version = 2;
    await Promise.all([...older, ask('c')]);
    expect(Object.fromEntries(heard)).toEqual({ a: 'stale 2', b: 'stale 2', c: 'granted' });
  });
});
