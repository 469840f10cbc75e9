import { SluiceTypeError } from '@sluice/core';
import type { Engine } from '@sluice/core/engine';
import {
  ENGINE_BACKED_OPTIONS,
  type EngineBackedOptions,
  type EngineHost,
  describeValue,
  hostMakerOf,
  optional,
  type SchemaOf,
} from '@sluice/core/internal';
import { type RedisClient, redisEngine } from '@sluice/redis';

/**
 * The options every hybrid store takes (leasedStore, dividedStore): where its central state lives, as a Redis
 * client or an engine, and those of every engine-backed store (see docs/options.md).
 */
export interface HybridBackedOptions extends EngineBackedOptions {
  /**
   * Your Redis client, as you have it: ioredis 5/6 (`new Redis()`, `new Cluster()`), iovalkey, node-redis 5/6
   * (`createClient()`, `createCluster()`, connected or connecting) or Valkey GLIDE 2 (`GlideClient`,
   * `GlideClusterClient`). The store never closes it. Give this or `engine`.
   */
  redis?: RedisClient | undefined;
  /**
   * The engine the mode runs over, in place of `redis`: one whose package gives the modes what they need
   * beside the contract (its host: health probe, start-up checks, lists, boards), such as `redisEngine(...)`
   * of `@sluice/redis`. Give this or `redis`.
   */
  engine?: Engine | undefined;
}

/** An `engine` option: an Engine whose package hangs a host on it. */
function engineValue(name: string, value: unknown): Engine {
  if (typeof value !== 'object' || value === null || hostMakerOf(value as Engine) === undefined)
    throw new SluiceTypeError(
      name,
      value,
      `${name} must be an engine whose package gives the modes a host (redisEngine of @sluice/redis), got ` +
        describeValue(value),
    );
  return value as Engine;
}

/** The options every hybrid store shares, as a schema (see HybridBackedOptions): `redis` is parsed to its engine. */
export const HYBRID_BACKED_OPTIONS = {
  redis: optional<Engine>((_name, value) => redisEngine({ redis: value as RedisClient })),
  engine: optional(engineValue),
  ...ENGINE_BACKED_OPTIONS,
} as const satisfies SchemaOf<HybridBackedOptions, 'redis'>;

/**
 * The host a hybrid store runs its mode on: its `redis` client's or its `engine`'s (exactly one given), with
 * the store's deadline; a start-up check's finding goes to `onMisconfigured`.
 * @example
 * const host = hostOfStore('leasedStore', o, (error) => emitSafely(this, 'store-error', error))
 */
export function hostOfStore(
  store: string,
  o: { readonly redis: Engine | undefined; readonly engine: Engine | undefined; readonly timeoutMs: number },
  onMisconfigured: (error: Error) => void,
): EngineHost {
  const engine = o.redis ?? o.engine;
  if (engine === undefined || (o.redis !== undefined && o.engine !== undefined))
    throw new SluiceTypeError(
      'redis',
      undefined,
      `${store} takes where its state lives once: a Redis client as \`redis\`, or an engine as \`engine\``,
    );
  // Checked by the option's own check: an engine given carries a host maker.
  return (hostMakerOf(engine) as NonNullable<ReturnType<typeof hostMakerOf>>).host(o.timeoutMs, onMisconfigured);
}
