import type { Algorithm } from '../../algorithms/algorithm.js';
import type { Engine } from '../../contract/engine.js';
import type { BoundStore } from '../../engine/store.js';
import type { DecisionSource } from '../../engine/observe.js';
import type { Clock } from '../../foundation/clock.js';
import type { DenyCache } from '../deny-cache.js';
import type { FallbackBinding } from '../fail-mode.js';
import type { EngineHealth } from '../health.js';
import type { DecisionEvent } from '../store-events.js';

/**
 * The deny caches of a limiter's prefix: this binding's own (used for a single rule whose denials hold, see
 * Algorithm.stableDenials), and how a key's cached denials are dropped here under every plan of the limiter
 * (`forgetHere`) and, on a reset, unblock or refund, on every node (`publishReset`).
 */
export interface DenialSharing {
  /** This binding's own cache (used only where a denial holds: a single rule with stable denials). */
  readonly cache: DenyCache;
  /** Drops `key` from the deny cache of every binding of the limiter's prefix in this process. */
  readonly forgetHere: (key: string) => void;
  /** Tells every node to drop `key` from its deny caches: after a reset, an unblock or a refund. */
  readonly publishReset: (key: string) => Promise<unknown>;
}

/**
 * What an engine can tell without a call about a key's ban (Redis: a marker per Cluster slot, raised while a
 * `block` ban can be in force there): an allowed key skips its rules, so `explicitBan` is asked of every one,
 * and a store that keeps such a marker spares the engine a call per allowed key.
 */
export interface BanHint {
  /** False when `key` surely holds no ban set by `block` (the engine is not asked); true when it may. */
  mayHold(key: string): boolean | Promise<boolean>;
  /** This node just banned `key`: its marker is up from now on, here. */
  raised(key: string): void;
}

/** The source an engine's own decisions are marked with (metrics' `sluice.source`). */
export type EngineSource = Extract<DecisionSource, 'redis' | 'postgres' | 'engine'>;

/** sluice's engines by their `Engine.name`: the source their decisions are marked with, and their name in messages. */
const KNOWN_ENGINES: Readonly<Record<string, { readonly source: EngineSource; readonly label: string }>> = {
  redis: { source: 'redis', label: 'Redis' },
  postgres: { source: 'postgres', label: 'PostgreSQL' },
};

/**
 * The source `engine`'s decisions are marked with ('engine' for one of your own) and its name in messages.
 * @example
 * engineKind(redisEngine({ redis })) // { source: 'redis', label: 'Redis' }
 */
export function engineKind(engine: Engine): { readonly source: EngineSource; readonly label: string } {
  return Object.hasOwn(KNOWN_ENGINES, engine.name)
    ? (KNOWN_ENGINES[engine.name] as (typeof KNOWN_ENGINES)[string])
    : { source: 'engine', label: `the ${engine.name} engine` };
}

/** The parts a store assembles into one limiter's exact decisions over an engine (see ExactBinding). */
export interface ExactParts {
  /** Decides and adjusts (its own deadlines long: the binding's `timeoutMs` is the decision's). */
  readonly engine: Engine;
  readonly prefix: string;
  readonly rules: readonly Algorithm[];
  /** A rule's state name under this binding (its generation's, for live limits). */
  readonly stateName: (rule: Algorithm) => string;
  /** The configuration version the rules are (live limits), read per call; undefined: not checked. */
  readonly version: (() => number) | undefined;
  /** How long a decision or a control waits for the engine before the fail mode takes it. */
  readonly timeoutMs: number;
  /** The decision clock, or undefined for the engine's. */
  readonly decisionClock: Clock | undefined;
  /** This process's clock: the deny cache, the fail mode's decisions. */
  readonly localClock: Clock;
  /** Where a failure about `key` is probed (the health machine's probe key). */
  readonly probeKey: (key: string) => string;
  /** The store's health machine: decisions skip the engine while it fails, and every call reports to it. */
  readonly health: EngineHealth;
  /** What decides while the engine is away (one per limiter, shared with whatever else decides its keys). */
  readonly fallback: FallbackBinding;
  /** Undefined: no deny cache. */
  readonly denials: DenialSharing | undefined;
  /**
   * Tells every node a refund may have freed `key` (sent only when the key was denying before it), for a mode
   * that keeps no deny cache but denies from state of its own (leased mode's spent leases). Undefined:
   * `denials.publishReset` does.
   */
  readonly publishRefund?: ((key: string) => Promise<unknown>) | undefined;
  /** Undefined: every allowed key's ban is asked of the engine. */
  readonly banHint?: BanHint | undefined;
  /** Already isolated: a throwing callback is reported, never thrown here. */
  readonly onDecision: ((event: DecisionEvent) => void) | undefined;
  /** Releases what the store holds for this binding. */
  readonly unbind: () => void;
  /**
   * Live limits: the engine answered that the limiter's configuration is newer (`version`) than this
   * binding's. Resolves to the binding that decides under it, or undefined when it cannot be read (the fail
   * mode decides). Undefined: versions are not checked.
   */
  readonly onStale?: ((version: number) => Promise<BoundStore | undefined>) | undefined;
  /** True for the binding of one key's own rules (limiter.override): its decisions say so. */
  readonly override?: boolean | undefined;
}
