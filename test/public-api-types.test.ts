/**
 * Type-level tests for the subpaths and @sluice/hybrid: checked by `tsc` in `npm test` (expectTypeOf does
 * nothing at run time; nothing here touches Redis).
 */
import type { Decision, Limiter, RateLimitedError, Store } from '@sluice/core';
import { countLimit, type rateLimited as limitMethod } from '@sluice/core/decorators';
import {
  type CheckEngineOptions,
  type ConformanceError,
  type ConformanceReport,
  type Engine,
  type MemoryEngineOptions,
  checkEngine,
  memoryEngine,
} from '@sluice/core/engine';
import { type KeyStrategy, byIp, byUser, rateLimit, rateLimitHook } from '@sluice/core/http';
import {
  type FallbackChargedEvent,
  type FleetEvent,
  type ReconfiguredEvent,
  type RedisClient,
  type RedisStore,
  redisStore,
} from '@sluice/redis';
import {
  type DividedStore,
  type LeaseEvent,
  type LeasedStore,
  type MembershipEvent,
  dividedStore,
  leasedStore,
} from '@sluice/hybrid';
import { type PostgresEngineOptions, postgresEngine } from '@sluice/postgres';
import type { Request, Response } from 'express';
import type pg from 'pg';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { describe, expectTypeOf, it } from 'vitest';

describe('public API types of the subpaths and hybrid', () => {
  it('http: the middleware takes Express and Fastify types without casts', () => {
    const key: KeyStrategy<Request> = byUser((req: Request) => req.header('x-user'));
    expectTypeOf(rateLimit<Request, Response>)
      .parameter(0)
      .toHaveProperty('limiter')
      .toEqualTypeOf<Limiter | undefined>();
    expectTypeOf(rateLimit<Request, Response>).returns.toEqualTypeOf<
      (req: Request, res: Response, next: (error?: unknown) => void) => void
    >();
    expectTypeOf(rateLimitHook<FastifyRequest, FastifyReply>).returns.toEqualTypeOf<
      (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void) => void
    >();
    expectTypeOf(byIp()).toMatchTypeOf<KeyStrategy<Request>>();
    expectTypeOf(byIp()).toMatchTypeOf<KeyStrategy<FastifyRequest>>();
    expectTypeOf(key).returns.toEqualTypeOf<string | undefined | null>();
  });

  it('decorators: RateLimitedError carries the Decision; presets are method decorators', () => {
    expectTypeOf<RateLimitedError['decision']>().toEqualTypeOf<Decision>();
    expectTypeOf(countLimit).returns.toEqualTypeOf<ReturnType<typeof limitMethod>>();
  });

  it('modes are stores with typed events: one Limiter type over each', () => {
    expectTypeOf<LeasedStore>().toMatchTypeOf<Store>();
    expectTypeOf<DividedStore>().toMatchTypeOf<Store>();
    expectTypeOf<RedisStore>().toMatchTypeOf<Store>();
    expectTypeOf(leasedStore).returns.toEqualTypeOf<LeasedStore>();
    expectTypeOf(dividedStore).returns.toEqualTypeOf<DividedStore>();
    // Never called: only compiled, so the listeners' parameter types are checked.
    const listen = (leased: LeasedStore, divided: DividedStore, exact: RedisStore) => {
      leased.on('lease', (e) => expectTypeOf(e).toEqualTypeOf<LeaseEvent>());
      leased.on('store-error', (e) => expectTypeOf(e).toEqualTypeOf<Error>());
      leased.on('fleet', (e) => expectTypeOf(e).toEqualTypeOf<FleetEvent>());
      exact.on('fleet', (e) => expectTypeOf(e).toEqualTypeOf<FleetEvent>());
      divided.on('membership', (e) => expectTypeOf(e).toEqualTypeOf<MembershipEvent>());
      // @ts-expect-error leased mode has no membership
      leased.on('membership', () => {});
    };
    expectTypeOf(listen).toBeFunction();
  });

  it('a union of the three stores takes the events they share (switching modes is one line)', () => {
    // Never called: only compiled, as a service picks its mode from its configuration.
    const pick = (mode: 'exact' | 'leased' | 'divided', redis: RedisClient) => {
      const store =
        mode === 'leased'
          ? leasedStore({ redis })
          : mode === 'divided'
            ? dividedStore({ redis })
            : redisStore({ redis });
      store.on('store-error', (error) => expectTypeOf(error).toEqualTypeOf<Error>());
      store.on('store-recovered', () => {});
      store.once('reconfigured', (e) => expectTypeOf(e).toEqualTypeOf<ReconfiguredEvent>());
      store.on('fallback-charged', (e) => expectTypeOf(e).toEqualTypeOf<FallbackChargedEvent>());
      const onError = (error: Error) => expectTypeOf(error).toEqualTypeOf<Error>();
      store.on('store-error', onError).off('store-error', onError);
      // @ts-expect-error only leased mode leases
      store.on('lease', () => {});
      expectTypeOf(store.on('callback-error', () => {})).toEqualTypeOf<RedisStore | LeasedStore | DividedStore>();
      return store;
    };
    expectTypeOf(pick).toBeFunction();
  });

  it('engine: memoryEngine is an Engine, and checkEngine checks any Engine', () => {
    expectTypeOf(memoryEngine).parameter(0).toEqualTypeOf<MemoryEngineOptions | undefined>();
    expectTypeOf(memoryEngine).returns.toEqualTypeOf<Engine>();
    expectTypeOf(checkEngine).parameters.toEqualTypeOf<[Engine, (CheckEngineOptions | undefined)?]>();
    expectTypeOf(checkEngine).returns.toEqualTypeOf<Promise<ConformanceReport>>();
    expectTypeOf<ConformanceError['caseName']>().toEqualTypeOf<string>();
    // Never called: only compiled.
    // @ts-expect-error a seed is a number
    const wrongSeed = () => checkEngine(memoryEngine(), { seed: '42' });
    expectTypeOf(wrongSeed).toBeFunction();
  });

  it('postgres: postgresEngine takes a pg Pool and is an Engine', () => {
    expectTypeOf(postgresEngine).parameter(0).toEqualTypeOf<PostgresEngineOptions>();
    expectTypeOf(postgresEngine).returns.toEqualTypeOf<Engine>();
    expectTypeOf<PostgresEngineOptions['pool']>().toEqualTypeOf<pg.Pool>();
    // Never called: only compiled.
    // @ts-expect-error the pool is a pg Pool, not a connection string
    const wrongPool = () => postgresEngine({ pool: 'postgres://localhost' });
    expectTypeOf(wrongPool).toBeFunction();
  });
});
