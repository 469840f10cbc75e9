import type { Clock } from '@sluice/core';
import type { Engine } from '@sluice/core/engine';
import type { EventEmitter } from 'eventemitter3';
import type { EngineHost, NodeIdentity } from '@sluice/core/internal';

/** What every binding of a hybrid store shares, whichever its mode: its settings, clocks, identity and events. */
export interface HybridContext<Settings, Events extends EventEmitter.ValidEventTypes> {
  readonly o: Settings;
  /** What the engine's package gives the mode beside the contract: health probe, checks, lists, boards. */
  readonly host: EngineHost;
  /** The host's engine, with no deadline of its own: the modes keep theirs. */
  readonly engine: Engine;
  /** The client clock the scripts are given (heartbeats, leases), or undefined for Redis TIME. */
  readonly decisionClock: Clock | undefined;
  /** This process's clock (or the Clock given): local decisions, demand, lease expiry. */
  readonly clock: Clock;
  /** This node's id among a key's lessees and in its fleets (a new one if another live process was given the same). */
  readonly identity: NodeIdentity;
  readonly events: EventEmitter<Events>;
}
