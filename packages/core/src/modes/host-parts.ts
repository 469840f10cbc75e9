import { type Clock, systemClock } from '../foundation/clock.js';
import { type CallbackEmitter, emitSafely } from '../foundation/callbacks.js';
import type { EngineHost, FleetPresence } from './engine-host.js';
import { type ClockOption, storeClocks } from './engine-options.js';
import { Fallback, type FailMode } from './fail-mode.js';
import { EngineHealth } from './health.js';
import { NodeIdentity } from './node-identity.js';

/** What a store over an engine host is assembled from, one of each per store. */
export interface HostParts {
  /** The client clock, or undefined for the engine's. */
  readonly decisionClock: Clock | undefined;
  /** This process's clock: deadlines, caches, the fail mode. */
  readonly localClock: Clock;
  /** This node's name in its limiters' fleets (a new one if another live process was given the same). */
  readonly identity: NodeIdentity;
  /** The one health machine: `store-error` and `store-recovered` go to the store's events. */
  readonly health: EngineHealth;
  /** The one fail mode. */
  readonly fallback: Fallback;
  /** failMode 'local': what the store knows of its fleet (each change is a `fleet` event); undefined otherwise. */
  readonly presence: FleetPresence | undefined;
}

/** The settings HostParts are made from (a store's parsed options). */
export interface HostSettings {
  readonly clock: ClockOption;
  readonly timeoutMs: number;
  readonly maxKeys: number;
  readonly nodeId: string | undefined;
  readonly heartbeatMs: number;
  readonly assumedNodes: number;
  readonly failMode: FailMode;
}

/**
 * The parts of a store that asks `host`'s engine on the decision path, from its settings: its events
 * (`store-error`, `store-recovered`, `fleet`) go to `events`; `onHealthChange` is told too, after them. A node
 * without an id is given a random one (`newId`: the runtime's UUID).
 * @example
 * const parts = hostParts(host, o, this, crypto.randomUUID)
 */
export function hostParts(
  host: Pick<EngineHost, 'health' | 'presence'>,
  o: HostSettings,
  events: CallbackEmitter,
  newId: () => string,
  onHealthChange?: (healthy: boolean) => void,
): HostParts {
  const { decisionClock, localClock } = storeClocks(o.clock);
  const identity = new NodeIdentity(o.nodeId ?? newId(), (error) => emitSafely(events, 'store-error', error));
  const health = new EngineHealth({
    ...host.health,
    timeoutMs: o.timeoutMs,
    onChange: (healthy, error) => {
      if (healthy) emitSafely(events, 'store-recovered');
      else emitSafely(events, 'store-error', error);
      onHealthChange?.(healthy);
    },
  });
  return {
    decisionClock,
    localClock,
    identity,
    health,
    fallback: new Fallback({ mode: o.failMode, clock: localClock, maxKeys: o.maxKeys, timeoutMs: o.timeoutMs }),
    presence:
      o.failMode === 'local'
        ? host.presence({
            identity,
            heartbeatMs: o.heartbeatMs,
            assumedNodes: o.assumedNodes,
            decisionClock,
            // A clock of the user's own (a test's) is theirs to set; the process's is compared with the engine's.
            skewClock: decisionClock === undefined || decisionClock === systemClock ? systemClock : undefined,
            onCount: (prefix, nodes) => emitSafely(events, 'fleet', { prefix, nodes }),
          })
        : undefined,
  };
}
