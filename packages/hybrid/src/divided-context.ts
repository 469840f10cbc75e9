import { randomUUID } from 'node:crypto';
import { MemoryStore, systemClock } from '@sluice/core';
import {
  type EngineHost,
  type ParsedOptions,
  emitSafely,
  Fallback,
  NodeIdentity,
  storeClocks,
} from '@sluice/core/internal';
import type { EventEmitter } from 'eventemitter3';
import type { DIVIDED_STORE_OPTIONS } from './divided-options.js';
import type { DividedEvents } from './divided-events.js';
import type { HybridContext } from './hybrid-context.js';
import { Membership } from './membership.js';

/** dividedStore's options, checked and with their defaults (see DIVIDED_STORE_OPTIONS). */
export type DivideSettings = ParsedOptions<typeof DIVIDED_STORE_OPTIONS>;

/** What every binding of a divided store shares. */
export interface DivideContext extends HybridContext<DivideSettings, DividedEvents> {
  /** The states of every limiter of the store, each in its own namespace, bounded by maxKeys. */
  readonly memory: MemoryStore;
  /** With a reserve: each node's part of it, held here while Redis is away (failMode 'local' of the other modes). */
  readonly away: Fallback;
  /** One heartbeat for every limiter of the store (one call per slot). */
  readonly membership: Membership;
}

/** The context of a divided store over `host` whose events go to `events`: decisions on the local clock, heartbeats on the client's. */
export function divideContext(o: DivideSettings, host: EngineHost, events: EventEmitter<DividedEvents>): DivideContext {
  const { decisionClock, localClock } = storeClocks(o.clock);
  const engine = host.engine;
  const identity = new NodeIdentity(o.nodeId ?? randomUUID(), (error) => emitSafely(events, 'store-error', error));
  return {
    o,
    host,
    engine,
    decisionClock,
    clock: localClock,
    identity,
    memory: new MemoryStore({ clock: localClock, maxKeys: o.maxKeys }),
    away: new Fallback({ mode: 'local', clock: localClock, maxKeys: o.maxKeys, timeoutMs: o.timeoutMs }),
    membership: new Membership({
      engine,
      link: host.health.link,
      identity,
      heartbeatMs: o.heartbeatMs,
      clock: decisionClock,
      // Decisions here run on the process's clock unless a Clock of the user's own was given.
      skewClock: localClock === systemClock ? systemClock : undefined,
    }),
    events,
  };
}
