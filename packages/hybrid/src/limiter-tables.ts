import type { Algorithm } from '@sluice/core';
import type { AccessListBinding, LimitedKeysBinding, RuleSet } from '@sluice/core/internal';
import {
  type ChannelListener,
  type LuaScript,
  RedisAccessLists,
  RedisBoards,
  type RedisConnection,
  type StartupChecks,
  writeDescriptor,
} from '@sluice/redis/internal';
import { hybridRule } from './supported-rule.js';

/** The mode the CLI reads for each hybrid store. */
const MODE_OF = { leasedStore: 'leased', dividedStore: 'divided' } as const;

/**
 * What a hybrid store keeps on Redis for each of its limiters beside their states, shared by every process
 * with the limiter's prefix: the start-up check of its scripts, the descriptor the CLI reads, its
 * limited-keys board and its allow and deny lists.
 * @example
 * const tables = new LimiterTables(connection, 500, checks, undefined)
 * const rule = tables.enrol('dividedStore', ruleSet, () => [membershipScript()])
 */
export class LimiterTables {
  readonly checks: StartupChecks;
  readonly #connection: RedisConnection;
  readonly #boards: RedisBoards;
  readonly #lists: RedisAccessLists;

  /** @param channels - where the lists hear of a change at once; undefined: they are read every refreshMs */
  constructor(
    connection: RedisConnection,
    timeoutMs: number,
    checks: StartupChecks,
    channels: ChannelListener | undefined,
  ) {
    this.checks = checks;
    this.#connection = connection;
    this.#boards = new RedisBoards({ connection, timeoutMs }, checks);
    this.#lists = new RedisAccessLists({ connection, timeoutMs, checks, channels });
  }

  /**
   * A limiter bound to `store`: its one rule (refused, naming the store, if the store cannot hold it), the
   * `scripts` it runs checked at start-up, and what the CLI reads to know it runs here, and in which mode.
   */
  enrol(store: keyof typeof MODE_OF, ruleSet: RuleSet, scripts: (rule: Algorithm) => readonly LuaScript[]): Algorithm {
    const rule = hybridRule(store, ruleSet.rules[0] as Algorithm);
    this.checks.add(ruleSet.prefix, scripts(rule));
    void writeDescriptor(this.#connection, ruleSet.prefix, MODE_OF[store], [rule]);
    return rule;
  }

  /** A limiter's allow and deny lists on Redis, held by every process with its prefix (see RedisAccessLists). */
  bindAccessList(prefix: string): AccessListBinding {
    return this.#lists.bind(prefix);
  }

  /** A limiter's limited-keys board on Redis, shared by every process with its prefix (see RedisBoards). */
  bindLimitedKeys(prefix: string): LimitedKeysBinding {
    return this.#boards.bind(prefix);
  }
}
