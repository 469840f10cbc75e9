import { type Algorithm, type CarryMode, type LimiterConfiguration, SluiceError } from '@sluice/core';
import {
  emitSafely,
  stateName,
  type LiveConfig,
  type LiveRule,
  StoredConfiguration,
  firstConfig,
  overridden,
  reconfigured,
  withoutOverride,
} from '@sluice/core/internal';
import type { DivideContext } from './divided-context.js';
import { hybridRule } from './supported-rule.js';

/**
 * A divided limiter's configuration (live limits) as kept in Redis for every node of its prefix, and as this
 * node decides under it. Read again when a heartbeat or a draw finds its slot at another version (no
 * subscriber per node: a fleet of hundreds would hold one each); a changed rule is handed to the limiter to
 * switch to, an unchanged one only moves the version.
 */
export class DividedConfig {
  readonly #ctx: DivideContext;
  readonly #prefix: string;
  /** The limiter switches to a new rule from now on (see DividedBinding's switch). */
  readonly #switchTo: (entry: LiveRule, version: number) => void;
  /** Told of each configuration adopted (its overrides may have changed). */
  readonly #adopted: (config: LiveConfig) => void;
  readonly #stored: StoredConfiguration;
  #config: LiveConfig;
  #configuration: LimiterConfiguration;
  /** The name the states of the rule in force live under. */
  #state: string;
  /** The read of the stored configuration under way (a message and a heartbeat arriving together share it). */
  #reading: Promise<void> | undefined;
  #closed = false;

  constructor(
    ctx: DivideContext,
    prefix: string,
    rule: Algorithm,
    switchTo: (entry: LiveRule, version: number) => void,
    adopted: (config: LiveConfig) => void,
  ) {
    this.#ctx = ctx;
    this.#prefix = prefix;
    this.#switchTo = switchTo;
    this.#adopted = adopted;
    this.#state = stateName(rule);
    this.#config = firstConfig([rule]);
    this.#configuration = { version: 1, rules: [rule] };
    this.#stored = new StoredConfiguration({ engine: ctx.engine, prefix, timeoutMs: ctx.o.timeoutMs });
  }

  /** The version this node decides under (1 until limiter.reconfigure). */
  get version(): number {
    return this.#config.version;
  }

  get configuration(): LimiterConfiguration {
    return this.#configuration;
  }

  /** The configuration in force, its overrides included. */
  get config(): LiveConfig {
    return this.#config;
  }

  /** The rule in force with the generations it carries states from. */
  get inForce(): LiveRule {
    return this.#config.rules[0] as LiveRule;
  }

  /**
   * Reads the stored configuration and decides under it (the store's ready(), a heartbeat that found its
   * slot at a newer version, a draw on the reserve that did). Rejects when it cannot be read or is of a
   * later format. A slot at `seen`, ahead of the stored record, means the record was lost: it is stored again
   * (see StoredConfiguration.inForce) and every node adopts it.
   */
  refresh(seen = 1): Promise<void> {
    this.#reading ??= this.#stored
      .inForce(this.#config, seen, (error) => emitSafely(this.#ctx.events, 'store-error', error))
      .then((config) => {
        if (config !== undefined) this.#adopt(config);
      })
      .finally(() => {
        this.#reading = undefined;
      });
    return this.#reading;
  }

  /** The fleet's slot is at a newer configuration: read it (a failure keeps the last one known, and says so). */
  heard(seen = 1): void {
    this.refresh(seen).catch((error: unknown) =>
      emitSafely(this.#ctx.events, 'store-error', error instanceof Error ? error : new Error(String(error))),
    );
  }

  /** Stores `rules` for every node (see StoredConfiguration.change); each switches within a heartbeat, this one at once. */
  async reconfigure(rules: readonly Algorithm[], carry: CarryMode): Promise<LimiterConfiguration> {
    for (const rule of rules) hybridRule('dividedStore', rule);
    const { clock } = this.#ctx;
    await this.#change((current, version) => reconfigured(current, rules, carry, version, clock.now()));
    return this.#configuration;
  }

  /**
   * Gives `key` rules of its own for every node (decided exactly on the engine: see DividedOverrides). The
   * change raises the version everywhere (not only where the key's states live): a node learns of it at its
   * next heartbeat, the fleet's slot telling it, since it asks the engine nothing for a divided key.
   */
  async override(key: string, rules: readonly Algorithm[]): Promise<void> {
    await this.#change((current, version) => overridden(current, key, rules, version, this.#ctx.clock.now()));
  }

  /** Takes `key`'s override away for every node (the key goes back to the shares); no override: nothing. */
  async removeOverride(key: string): Promise<void> {
    await this.#change((current, version) =>
      current.overrides.has(key) ? withoutOverride(current, key, version, this.#ctx.clock.now()) : undefined,
    );
  }

  /** Every override in force, as stored, in key order. */
  async overrides(): Promise<Array<{ key: string; rules: readonly Algorithm[] }>> {
    await this.refresh();
    return [...this.#config.overrides]
      .map(([key, rules]) => ({ key, rules: rules.map((e) => e.rule) }))
      .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  async #change(make: (current: LiveConfig, version: number) => LiveConfig | undefined): Promise<void> {
    const { events } = this.#ctx;
    await this.#stored.change(
      this.#config,
      make,
      undefined,
      (config) => this.#adopt(config),
      (error) => emitSafely(events, 'store-error', error),
    );
  }

  /** The limiter closed: a configuration read after this is not adopted. */
  close(): void {
    this.#closed = true;
  }

  /** Decides under `config` from now on (a later version than this node's); a changed rule is switched in place. */
  #adopt(config: LiveConfig): void {
    if (config.version <= this.#config.version || this.#closed) return;
    const [entry, ...more] = config.rules;
    // A record this mode cannot decide (stored by a limiter of another mode on this prefix): refused before
    // anything changes, so this node keeps deciding under the last configuration it could.
    if (entry === undefined || more.length > 0) {
      throw new SluiceError(
        'UNSUPPORTED',
        `dividedStore holds one rule per limiter; the configuration stored for ${JSON.stringify(this.#prefix)} ` +
          `(version ${config.version}) has ${config.rules.length}`,
      );
    }
    if (entry.state !== this.#state) hybridRule('dividedStore', entry.rule);
    this.#config = config;
    this.#configuration = { version: config.version, rules: config.rules.map((e) => e.rule) };
    this.#adopted(config);
    if (entry.state !== this.#state) {
      this.#state = entry.state;
      this.#switchTo(entry, config.version);
    }
    emitSafely(this.#ctx.events, 'reconfigured', {
      prefix: this.#prefix,
      version: config.version,
      rules: this.#configuration.rules,
    });
  }
}
