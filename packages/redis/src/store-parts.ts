import { randomUUID } from 'node:crypto';
import { type Clock, systemClock } from '@sluice/core';
import {
  type CallbackEmitter,
  type ParsedOptions,
  emitSafely,
  Fallback,
  NodeIdentity,
  EngineHealth,
  type FAIL_MODE_OPTIONS,
  storeClocks,
} from '@sluice/core/internal';
import type { RedisConnection } from './connection/connection.js';
import { RedisPresence } from './fleet/presence.js';
import { redisHealthProbe } from './health-probe.js';
import type { REDIS_BACKED_OPTIONS } from './options.js';
import { StartupChecks } from './preflight.js';

/** The parsed options every store that asks Redis on the decision path takes (redisStore, leasedStore). */
export type RedisBackedSettings = ParsedOptions<typeof REDIS_BACKED_OPTIONS & typeof FAIL_MODE_OPTIONS>;

/** What every store that asks Redis on the decision path is assembled from, one of each per store. */
export interface StoreParts {
  readonly connection: RedisConnection;
  /** The client clock, or undefined for Redis TIME. */
  readonly decisionClock: Clock | undefined;
  /** This process's clock: deadlines, caches, the fail mode. */
  readonly localClock: Clock;
  /** This node's name in its limiters' fleets (a new one if another live process was given the same). */
  readonly identity: NodeIdentity;
  /** The one health machine: `store-error` and `store-recovered` go to the store's events. */
  readonly health: EngineHealth;
  /** The start-up check of every limiter bound; a misconfiguration is a `store-error`. */
  readonly checks: StartupChecks;
  /** The one fail mode. */
  readonly fallback: Fallback;
  /** failMode 'local': what the store knows of its fleet (each change is a `fleet` event); undefined otherwise. */
  readonly presence: RedisPresence | undefined;
}

/**
 * The parts of a Redis-backed store from its parsed options: its events (`store-error`, `store-recovered`,
 * `fleet`) go to `events`; `onHealthChange` is told too, after them.
 * @example
 * const parts = storeParts(parseOptions('myStore options', MY_OPTIONS, options, true), this)
 */
export function storeParts(
  o: RedisBackedSettings,
  events: CallbackEmitter,
  onHealthChange?: (healthy: boolean) => void,
): StoreParts {
  const connection = o.redis;
  const { decisionClock, localClock } = storeClocks(o.clock);
  const identity = new NodeIdentity(o.nodeId ?? randomUUID(), (error) => emitSafely(events, 'store-error', error));
  const health = new EngineHealth({
    ...redisHealthProbe(connection),
    timeoutMs: o.timeoutMs,
    onChange: (healthy, error) => {
      if (healthy) emitSafely(events, 'store-recovered');
      else emitSafely(events, 'store-error', error);
      onHealthChange?.(healthy);
    },
  });
  return {
    connection,
    decisionClock,
    localClock,
    identity,
    health,
    checks: new StartupChecks(connection, o.timeoutMs, (error) => emitSafely(events, 'store-error', error)),
    fallback: new Fallback({ mode: o.failMode, clock: localClock, maxKeys: o.maxKeys, timeoutMs: o.timeoutMs }),
    presence:
      o.failMode === 'local'
        ? new RedisPresence({
            connection,
            identity,
            heartbeatMs: o.heartbeatMs,
            assumedNodes: o.assumedNodes,
            decisionClock,
            // A clock of the user's own (a test's) is theirs to set; the process's is compared with Redis's.
            skewClock: decisionClock === undefined || decisionClock === systemClock ? systemClock : undefined,
            onCount: (prefix, nodes) => emitSafely(events, 'fleet', { prefix, nodes }),
          })
        : undefined,
  };
}
