import type { Algorithm, AlgorithmKind } from '../algorithms/algorithm.js';
import type { Engine } from '../contract/engine.js';
import type { FleetShare } from '../algorithms/shared-rule.js';
import type { AccessListBinding } from '../engine/access-list-store.js';
import type { LimitedKeysBinding } from '../engine/limited-keys-board.js';
import type { Clock } from '../foundation/clock.js';
import type { HealthProbe } from './health.js';
import type { NodeIdentity } from './node-identity.js';

/**
 * Where an engine keeps its host (see EngineHost) on the engine object its package makes: a registered
 * symbol, so two copies of @sluice/core in one app (a bundle beside node_modules) still find it.
 */
export const ENGINE_HOST: unique symbol = Symbol.for('sluice.engine-host') as never;

/** What a limiter of some mode runs on an engine: what its start-up check tries (Redis: its scripts' commands). */
export interface EngineUse {
  /** Exact decisions of these kinds (a leased limiter's cold keys too). */
  readonly decide?: readonly AlgorithmKind[] | undefined;
  /** Adjustments (refunds, penalties, resets, hand-backs) of these kinds. */
  readonly adjust?: readonly AlgorithmKind[] | undefined;
  /** Leases of these kinds (leased mode, divided mode's reserve). */
  readonly lease?: readonly AlgorithmKind[] | undefined;
  /** Fleet heartbeats (divided mode). */
  readonly heartbeat?: boolean | undefined;
  /** failMode 'local''s count of the fleet (see EngineHost.presence). */
  readonly presence?: boolean | undefined;
}

/** A store's start-up checks: one per limiter prefix, each of what the limiter runs there. */
export interface StartupCheck {
  /** Checks `use` on `prefix`, once per `id` (default: the prefix). */
  add(prefix: string, use: EngineUse, id?: string): void;
  /** Forgets the check registered under `id` (a limiter that closed). */
  remove(id: string): void;
  /**
   * Resolves once every check passed; rejects with SluiceError 'STORE_MISCONFIGURED' naming what is wrong, or
   * 'STORE_UNAVAILABLE' when the engine did not answer (tried again at the next call).
   */
  ready(): Promise<void>;
}

/** How many nodes share a limiter's limits, as failMode 'local' holds them (1 / live nodes). */
export interface FleetPresence {
  /** This node joins `prefix`'s fleet (once per prefix, whoever holds it) and holds its share until released. */
  track(prefix: string): {
    readonly share: FleetShare;
    /** Stops holding the prefix; the node leaves its fleet once every holder released it. */
    release(): void;
  };
  /** The live nodes of `prefix`'s fleet at the latest answered heartbeat, or undefined. */
  nodes(prefix: string): number | undefined;
  /** Leaves every fleet (one last call within `timeoutMs`) and stops. */
  close(timeoutMs: number): Promise<void>;
}

/** What a presence needs: this node, how often it says it is alive, and whom it tells of a fleet's size. */
export interface PresenceOptions {
  readonly identity: NodeIdentity;
  readonly heartbeatMs: number;
  /** The fleet's size taken until the engine answered. */
  readonly assumedNodes: number;
  /** The client clock, or undefined for the engine's. */
  readonly decisionClock: Clock | undefined;
  /** This process's clock, compared with the engine's at each heartbeat; undefined: not compared. */
  readonly skewClock?: Clock | undefined;
  /** Told when a prefix's count of live nodes changes (a store's `fleet` event). */
  readonly onCount?: ((prefix: string, nodes: number) => void) | undefined;
}

/** A limiter's operations tables on the engine: its allow and deny lists and its limited-keys board. */
export interface LimiterTables {
  /** The allow and deny lists of the limiter of `prefix`, held by every process with it. */
  bindAccessList(prefix: string): AccessListBinding;
  /** The limited-keys board of the limiter of `prefix`, shared by every process with it. */
  bindLimitedKeys(prefix: string): LimitedKeysBinding;
}

/**
 * What a store's modes need of an engine's package besides the contract: the parts only its own client can
 * make (the health machine's link and probe, the start-up checks, the operations tables, failMode 'local''s
 * presence), over one connection. An engine's package hangs a maker of it on the engines it makes
 * (ENGINE_HOST); `@sluice/hybrid` runs leased and divided mode over any engine that has one.
 */
export interface EngineHost {
  /** The engine on the host's connection, its adjust, lease and heartbeat with no deadline: the modes keep theirs. */
  readonly engine: Engine;
  readonly health: HealthProbe;
  /** Where a failure about `identity`'s state named `state` of `prefix` is probed (Redis: that key's slot). */
  probeKey(prefix: string, identity: string, state: string): string;
  /** The store's start-up checks (a misconfiguration found is told to the maker's `onMisconfigured` too). */
  readonly checks: StartupCheck;
  /** Says, for operator tools, what the limiter of `prefix` runs (informational: a failure is left unsaid). */
  describe(prefix: string, mode: 'exact' | 'leased' | 'divided', rules: readonly Algorithm[]): void;
  /**
   * The lists and boards of the store's limiters, checked by `checks`; the lists hear another node's change at
   * once when `heard` (on the host's subscriber), else they read the engine every refreshMs.
   */
  tables(heard: boolean): LimiterTables;
  /** failMode 'local''s count of each limiter's fleet, on this engine. */
  presence(options: PresenceOptions): FleetPresence;
  /** Settles once the host's subscriptions landed (messages of other nodes are heard from then on). */
  subscribed(): Promise<void>;
  /** Closes what the host opened (its subscriber); the client stays its owner's. */
  close(): Promise<void>;
}

/** What an engine's package hangs on its engines: a host over the engine's connection. */
export interface EngineHostMaker {
  /** `timeoutMs`: the store's deadline of one call; `onMisconfigured`: a start-up check's finding (a 'store-error'). */
  host(timeoutMs: number, onMisconfigured: (error: Error) => void): EngineHost;
}

/**
 * The host maker `engine` carries, or undefined for an engine whose package gives none.
 * @example
 * const host = hostMakerOf(redisEngine({ redis }))?.host(50, (error) => emitSafely(store, 'store-error', error))
 */
export function hostMakerOf(engine: Engine): EngineHostMaker | undefined {
  const maker = (engine as { [ENGINE_HOST]?: unknown })[ENGINE_HOST];
  return typeof maker === 'object' && maker !== null && typeof (maker as EngineHostMaker).host === 'function'
    ? (maker as EngineHostMaker)
    : undefined;
}

/**
 * `engine` carrying `maker` (an engine's package calls it on the engines it makes).
 * @example
 * return withHostMaker(checkedEngine(methods), { host: (timeoutMs, told) => redisHost(connection, timeoutMs, told) })
 */
export function withHostMaker<E extends Engine>(engine: E, maker: EngineHostMaker): E {
  Object.defineProperty(engine, ENGINE_HOST, { value: maker, enumerable: false });
  return engine;
}
