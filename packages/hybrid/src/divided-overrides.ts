import type { Algorithm } from '@sluice/core';
import {
  type BoundStore,
  EngineHealth,
  ExactBinding,
  type FleetShare,
  type LiveConfig,
  type LiveRule,
  identityOf,
} from '@sluice/core/internal';
import type { DivideContext } from './divided-context.js';

/** One overridden key's binding, and the state names it was made for (a changed override gets a new one). */
interface Held {
  readonly binding: ExactBinding;
  readonly states: string;
}

/** What a divided limiter's overrides need of it. */
export interface OverrideOwner {
  readonly prefix: string;
  /** The configuration version this node decides under. */
  version(): number;
  /** This node's part of the fleet's limit: the fail mode holds it of an override's rules while the engine is away. */
  readonly share: FleetShare;
  /** Reads the stored configuration (a decision found it newer): resolves to the binding of the key's rules now. */
  refresh(version: number): Promise<void>;
  /** The limiter's own binding, which decides a key no longer overridden. */
  readonly limiter: BoundStore;
  /** The engine failed or answered again, as an override's decision found it (the store's events). */
  failed(error: Error): void;
  recovered(): void;
}

/**
 * A divided limiter's overridden keys (limiter.override): each is decided exactly on the engine under its own
 * rules (ExactBinding: one engine call per decision, as redisStore's), not divided. An override is one key a
 * limiter treats apart (a tenant given more, an abuser given less), and a fleet of its own for each would cost
 * every node a heartbeat per key. An override starts its rules afresh (what the key used so far is spread
 * over the nodes' shares, which no engine state holds) and, removed, hands the key back to the shares as they
 * stand. Every node learns of a change at its next heartbeat (the change raises the version everywhere).
 * @example
 * const overrides = new DividedOverrides(ctx, owner)
 * const binding = overrides.of('tenant:big', config) // undefined: the key is divided as usual
 */
export class DividedOverrides {
  readonly #ctx: DivideContext;
  readonly #owner: OverrideOwner;
  readonly #held = new Map<string, Held>();
  /** Made at the first override: whether the engine answers override decisions. */
  #health: EngineHealth | undefined;

  constructor(ctx: DivideContext, owner: OverrideOwner) {
    this.#ctx = ctx;
    this.#owner = owner;
  }

  /** The binding that decides `key` under `config`, or undefined when the key has no override. */
  of(key: string, config: LiveConfig): ExactBinding | undefined {
    const own = config.overrides.get(key);
    if (own === undefined) return undefined;
    const states = own.map((e) => e.state).join('\n');
    const held = this.#held.get(key);
    if (held !== undefined && held.states === states) return held.binding;
    held?.binding.unbind();
    const binding = this.#bind(own);
    this.#held.set(key, { binding, states });
    return binding;
  }

  /** Lets go of the bindings of keys whose override `config` no longer holds. */
  adopted(config: LiveConfig): void {
    for (const [key, held] of this.#held) {
      if (config.overrides.has(key)) continue;
      held.binding.unbind();
      this.#held.delete(key);
    }
  }

  #bind(own: readonly LiveRule[]): ExactBinding {
    const { o, host, engine, decisionClock, clock, away } = this.#ctx;
    const owner = this.#owner;
    const rules = own.map((e) => e.rule);
    const states = new Map<Algorithm, string>(own.map((e) => [e.rule, e.state]));
    const stateName = (rule: Algorithm) => states.get(rule) as string;
    const first = rules[0] as Algorithm;
    this.#health ??= new EngineHealth({
      ...host.health,
      timeoutMs: o.timeoutMs,
      onChange: (healthy, error) =>
        healthy ? owner.recovered() : owner.failed(error ?? new Error('an override decision failed')),
    });
    return new ExactBinding({
      engine,
      prefix: owner.prefix,
      rules,
      stateName,
      version: () => owner.version(),
      timeoutMs: o.timeoutMs,
      decisionClock,
      localClock: clock,
      probeKey: (key) => host.probeKey(owner.prefix, identityOf(first, key), stateName(first)),
      health: this.#health,
      // While the engine is away, this node holds its part of the override's limit.
      fallback: away.bind({ rules, prefix: owner.prefix, apart: `o${stateName(first)}` }, owner.share),
      denials: undefined,
      onDecision: undefined,
      onStale: async (version) => {
        await owner.refresh(version);
        return owner.limiter;
      },
      override: true,
      unbind: () => {},
    });
  }

  /**
   * The engine answers again: what the fail mode granted on each overridden key meanwhile is charged to the
   * engine (ExactBinding.settleFallback), so the outage's grants count against the override's limit after it.
   */
  async settle(charged: (counts: { keys: number; permits: number; kept: number }) => void): Promise<void> {
    for (const held of [...this.#held.values()]) {
      const counts = await held.binding.settleFallback().catch(() => undefined);
      if (counts !== undefined && counts.keys > 0) charged(counts);
    }
  }

  /** The limiter closed. */
  close(): void {
    for (const held of this.#held.values()) held.binding.unbind();
    this.#held.clear();
    this.#health?.close();
  }
}
