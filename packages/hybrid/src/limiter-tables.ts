import type { Algorithm } from '@sluice/core';
import type {
  AccessListBinding,
  EngineHost,
  EngineUse,
  LimitedKeysBinding,
  LimiterTables as HostTables,
  RuleSet,
} from '@sluice/core/internal';
import { hybridRule } from './supported-rule.js';

/** The mode the CLI reads for each hybrid store. */
const MODE_OF = { leasedStore: 'leased', dividedStore: 'divided' } as const;

/**
 * What a hybrid store keeps on its engine for each of its limiters beside their states, shared by every
 * process with the limiter's prefix: the start-up check of what it runs, the descriptor the CLI reads, its
 * limited-keys board and its allow and deny lists (the host's).
 * @example
 * const tables = new LimiterTables(host, false)
 * const rule = tables.enrol('dividedStore', ruleSet, () => ({ heartbeat: true }))
 */
export class LimiterTables {
  readonly #host: EngineHost;
  readonly #tables: HostTables;

  /** @param heard - whether the lists hear a change at once (on the host's subscriber); else they poll every refreshMs */
  constructor(host: EngineHost, heard: boolean) {
    this.#host = host;
    this.#tables = host.tables(heard);
  }

  /**
   * A limiter bound to `store`: its one rule (refused, naming the store, if the store cannot hold it), what it
   * runs (`use`) checked at start-up, and what the CLI reads to know it runs here, and in which mode.
   */
  enrol(store: keyof typeof MODE_OF, ruleSet: RuleSet, use: (rule: Algorithm) => EngineUse): Algorithm {
    const rule = hybridRule(store, ruleSet.rules[0] as Algorithm);
    this.#host.checks.add(ruleSet.prefix, use(rule));
    this.#host.describe(ruleSet.prefix, MODE_OF[store], [rule]);
    return rule;
  }

  /** A limiter's allow and deny lists, held by every process with its prefix. */
  bindAccessList(prefix: string): AccessListBinding {
    return this.#tables.bindAccessList(prefix);
  }

  /** A limiter's limited-keys board, shared by every process with its prefix. */
  bindLimitedKeys(prefix: string): LimitedKeysBinding {
    return this.#tables.bindLimitedKeys(prefix);
  }
}
