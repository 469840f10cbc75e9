import type { Adjustment, EngineRules } from '../../contract/engine.js';
import { isStale } from '../../contract/engine.js';
import { type GrantSource, type Permits, mostPermits, permitsOfRule } from '../../engine/store.js';
import { SluiceError } from '../../foundation/errors.js';
import { withDeadline } from '../deadline.js';
import { StaleConfigurationError, staleVersionOf } from '../stale.js';
import { type ExactParts, engineKind } from './exact-parts.js';

/** How many keys' fail-mode charges go to the engine at once after an outage (see settleFallback). */
const SETTLE_CHUNK = 32;

/**
 * A limiter's controls over its engine: reset, refund, penalize, block, unblock, each one `engine.adjust`
 * bounded by timeoutMs like a decision. While the engine is away, or when the call fails, the fail mode takes
 * it instead where it keeps state ('local'), and the call rejects with SluiceError('STORE_UNAVAILABLE') where
 * it keeps none ('open', 'closed'). A refund goes where its grant was counted (see refund). An engine that
 * answers the configuration newer rejects with StaleConfigurationError, untouched, unreported and never
 * handed to the fail mode (live limits read it and ask again).
 * @example
 * const controls = new ExactControls(parts, () => engineRules)
 * await controls.block('user:1', 60_000)
 */
export class ExactControls {
  readonly #o: ExactParts;
  readonly #rules: () => EngineRules;
  /** The engine's name in messages. */
  readonly #engine: string;

  constructor(parts: ExactParts, rules: () => EngineRules) {
    this.#o = parts;
    this.#rules = rules;
    this.#engine = engineKind(parts.engine).label;
  }

  /**
   * Forgets the key's own rules (rules counted against other identities are shared, and stay) and its ban,
   * in the fail mode and on the engine, and tells every node to drop it from its deny cache. A reset the
   * engine could not do rejects: no fail mode can stand in for it.
   */
  async reset(key: string): Promise<void> {
    this.#o.fallback.reset(key);
    await this.#onEngine(key, 'reset', async () => {
      await this.#adjust(key, { op: 'reset' });
      await this.#o.denials?.publishReset(key);
    });
  }

  /**
   * Gives back up to `permits` to the key's own rules where the grant was counted: a fail mode's grant to the
   * fail mode ('open' counted it nowhere), the engine's grant to the engine, never to the fail mode, which
   * never counted it (a refund the engine cannot take then rejects). A grant of unknown origin goes wherever
   * decisions go now. A refund of a key that was denying is announced as a reset is: a denial another node
   * cached may now be a grant. Any other refund is not, so a refund per request costs no message.
   */
  async refund(key: string, permits: Permits, grantedMsAgo: number, grant?: GrantSource): Promise<void> {
    const own = this.#o.rules.filter((rule) => rule.scope === undefined);
    if (own.length === 0) return;
    const { fallback, health } = this.#o;
    const onEngine = async (given: Permits) => {
      this.#announceRefund(key, await this.#adjust(key, { op: 'refund', permits: given, grantedMsAgo }));
    };
    if (grant === 'fallback') {
      // What the engine was charged with since (see settleFallback) goes back there too, while it answers.
      const uncharged = fallback.refund(key, permits, grantedMsAgo);
      const charged: Permits = Object.fromEntries(
        own.map((rule) => [rule.name, permitsOfRule(permits, rule) - permitsOfRule(uncharged, rule)]),
      );
      if (mostPermits(charged) > 0 && health.healthy)
        await this.#onEngine(key, 'refund', () => onEngine(charged)).catch(() => undefined);
      return;
    }
    if (grant === 'store') {
      if (!health.healthy)
        throw new SluiceError(
          'STORE_UNAVAILABLE',
          `refund(${JSON.stringify(key)}): ${this.#engine} counted this grant and is away; the fail mode ` +
            `never counted it`,
        );
      await this.#onEngine(key, 'refund', () => onEngine(permits));
      return;
    }
    await this.#control(
      key,
      'refund',
      () => fallback.refund(key, permits, grantedMsAgo),
      () => onEngine(permits),
    );
  }

  /**
   * Tells every node a refund freed `key`. Not awaited: the refund is made whether or not the message leaves
   * (a node that misses it asks the engine again within DENY_CACHE_TRUST_MS), and a refund must not wait a
   * round trip more for it. Sent before the refund resolves, so anything the caller publishes after it is
   * heard after it.
   */
  #announceRefund(key: string, freed: boolean): void {
    if (!freed) return;
    (this.#o.publishRefund ?? this.#o.denials?.publishReset)?.(key).catch(() => undefined);
  }

  /** Takes `permits` from every rule the key is counted against. */
  async penalize(key: string, permits: Permits): Promise<void> {
    await this.#control(
      key,
      'penalize',
      () => this.#o.fallback.penalize(key, permits),
      async () => {
        await this.#adjust(key, { op: 'penalize', permits });
      },
    );
  }

  /**
   * Charges the engine with what the fail mode granted while it was away (`charges`, from
   * FallbackBinding.takeCharges): each key's permits taken from every rule the key is counted against, as a
   * penalty (past the limit if need be), so the outage's grants count against the limit after it.
   * SETTLE_CHUNK keys at a time; a charge the engine cannot take now is kept for the next recovery. The
   * counts reported are each charge's largest count of one rule.
   */
  async settleFallback(charges: [string, Permits][]): Promise<{ keys: number; permits: number; kept: number }> {
    const { fallback } = this.#o;
    const sum = (list: [string, Permits][]) => list.reduce((total, [, permits]) => total + mostPermits(permits), 0);
    for (let i = 0; i < charges.length; i += SETTLE_CHUNK) {
      const chunk = charges.slice(i, i + SETTLE_CHUNK);
      const failed = await Promise.all(
        chunk.map(([key, permits]) =>
          this.#onEngine(key, 'settling the fail mode', async () => {
            await this.#adjust(key, { op: 'penalize', permits });
          }).then(
            () => false,
            () => true,
          ),
        ),
      );
      if (failed.some((f) => f)) {
        for (const [key, permits] of charges.slice(i)) fallback.keepCharge(key, permits);
        return { keys: i, permits: sum(charges.slice(0, i)), kept: sum(charges.slice(i)) };
      }
    }
    return { keys: charges.length, permits: sum(charges), kept: 0 };
  }

  /** Bans the key (a longer ban in force is kept). */
  async block(key: string, ms: number): Promise<void> {
    await this.#control(
      key,
      'block',
      () => this.#o.fallback.block(key, ms),
      async () => {
        await this.#adjust(key, { op: 'block', ms });
      },
    );
  }

  /** Lifts the key's ban, and tells every node to drop the key from its deny cache. */
  async unblock(key: string): Promise<void> {
    await this.#control(
      key,
      'unblock',
      () => this.#o.fallback.unblock(key),
      async () => {
        await this.#adjust(key, { op: 'unblock' });
        await this.#o.denials?.publishReset(key);
      },
    );
  }

  /** One adjustment of `key` under the rules in force; whether it freed the key (see AdjustAnswer). */
  async #adjust(key: string, adjustment: Adjustment): Promise<boolean> {
    const answer = await this.#o.engine.adjust(this.#rules(), key, adjustment, this.#o.decisionClock?.now());
    if (isStale(answer)) throw new StaleConfigurationError(answer.stale);
    return answer.freed;
  }

  /**
   * A control on the engine while it answers; the fail mode's when the engine is away or the call fails
   * ('local'), or a rejection naming the control ('open', 'closed').
   */
  async #control(key: string, what: string, locally: () => void, onEngine: () => Promise<void>): Promise<void> {
    const { fallback, health } = this.#o;
    if (health.healthy) {
      try {
        await this.#onEngine(key, what, onEngine);
        return;
      } catch (error) {
        if (!fallback.keepsState || staleVersionOf(error) !== undefined) throw error;
      }
    } else if (!fallback.keepsState) {
      throw new SluiceError(
        'STORE_UNAVAILABLE',
        `${what}(${JSON.stringify(key)}) could not reach ${this.#engine}, and failMode '${fallback.mode}' ` +
          `keeps no state to apply it to`,
      );
    }
    locally();
  }

  /** Runs `call` within timeoutMs; a failure is told to the health machine and rejects as STORE_UNAVAILABLE. */
  async #onEngine(key: string, what: string, call: () => Promise<void>): Promise<void> {
    try {
      await withDeadline(call(), this.#o.timeoutMs, what);
      this.#o.health.reportSuccess();
    } catch (error) {
      // A newer configuration is no failure of the engine: the caller re-reads it and adjusts again.
      if (staleVersionOf(error) !== undefined) throw error;
      this.#o.health.reportFailure(error, this.#o.probeKey(key));
      const why = error instanceof Error ? error.message : String(error);
      throw new SluiceError(
        'STORE_UNAVAILABLE',
        `${what}(${JSON.stringify(key)}) could not be done on ${this.#engine}: ${why}`,
        { cause: error },
      );
    }
  }
}
