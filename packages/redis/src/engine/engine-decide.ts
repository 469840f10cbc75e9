import { type Algorithm, type Permits, systemClock } from '@sluice/core';
import type { DecideAnswer, EngineAsk, EngineRules } from '@sluice/core/engine';
import type { RedisConnection } from '../connection/connection.js';
import { DEFAULT_MAX_BATCH } from '../options.js';
import { type Answer, type Asked, DecisionTransport, type TransportListener } from '../exact/transport.js';

/** One ask of a decide batch on its way: what the transport sends, and where its answer goes. */
class EngineAsked implements Asked {
  constructor(
    readonly key: string,
    readonly permits: Permits,
    readonly maxWaitMs: number,
    readonly now: number,
    readonly peek: boolean,
    readonly settle: (outcome: Outcome) => void,
  ) {}
}

/** What became of one ask. */
type Outcome =
  | { readonly kind: 'decided'; readonly decision: DecideAnswer }
  | { readonly kind: 'stale'; readonly version: number }
  | { readonly kind: 'failed'; readonly error: unknown };

/** Every ask's answer goes back to the ask itself. */
const LISTENER: TransportListener<EngineAsked> = {
  answered: (asked, answer: Answer) =>
    asked.settle({
      kind: 'decided',
      decision: {
        decision: answer.decision,
        decidedAtMs: answer.decidedAtMs,
        verdicts: answer.verdicts,
        ban: answer.ban,
      },
    }),
  failed: (asked, error) => asked.settle({ kind: 'failed', error }),
  unsent: (asked) => asked.settle({ kind: 'failed', error: new Error('redisEngine: a decision was not sent') }),
  stale: (asked, version) => asked.settle({ kind: 'stale', version }),
};

/**
 * redisEngine's `decide`: exact mode's own transport (DecisionTransport: decide.lua, or decide_one.lua for a
 * lone ask of one rule; a policy across Cluster slots by CrossSlotPolicy), with no deny cache, no fail mode and
 * no health (the modes keep theirs). One transport per rules object (its rule text and scripts are made once);
 * asks of one turn travel together, one call per slot.
 */
export class EngineDecider {
  readonly #connection: RedisConnection;
  readonly #timeoutMs: number;
  readonly #transports = new WeakMap<EngineRules, DecisionTransport<EngineAsked>>();

  constructor(connection: RedisConnection, timeoutMs: number) {
    this.#connection = connection;
    this.#timeoutMs = timeoutMs;
  }

  #transport(rules: EngineRules): DecisionTransport<EngineAsked> {
    let transport = this.#transports.get(rules);
    if (transport === undefined) {
      const names = new Map<Algorithm, string>(rules.rules.map((rule, r) => [rule, rules.states[r] as string]));
      const version = rules.version;
      transport = new DecisionTransport(
        {
          connection: this.#connection,
          rules: rules.rules,
          prefix: rules.prefix,
          stateName: (rule) => names.get(rule) as string,
          maxBatch: DEFAULT_MAX_BATCH,
          timeoutMs: this.#timeoutMs,
          localClock: systemClock,
          maxClockSkewMs: undefined,
          mayCall: () => true,
          version: version === undefined ? undefined : () => version,
        },
        LISTENER,
      );
      this.#transports.set(rules, transport);
    }
    return transport;
  }

  /**
   * Decides `asks` (checked by the caller), each at its own time; an ask a slot refuses under a newer
   * configuration is answered `{ stale }` (asks of other calls of the batch may have been decided).
   */
  async decide(rules: EngineRules, asks: readonly EngineAsk[]): Promise<readonly DecideAnswer[]> {
    if (asks.length === 0) return [];
    const transport = this.#transport(rules);
    const send = (ask: EngineAsk): Promise<Outcome> =>
      new Promise<Outcome>((settle) =>
        transport.send(new EngineAsked(ask.key, ask.permits, ask.maxWaitMs, ask.at ?? Number.NaN, ask.peek, settle)),
      );
    let outcomes: Outcome[];
    if (this.#connection.isCluster && rules.rules.some((rule) => rule.scope !== undefined)) {
      // A policy whose rules may live in several slots is decided slot by slot (CrossSlotPolicy), each ask on
      // its own: asks sent together would race, and the contract decides a batch's asks in order.
      outcomes = [];
      for (const ask of asks) outcomes.push(await send(ask));
    } else outcomes = await Promise.all(asks.map(send));
    return outcomes.map((outcome) => {
      if (outcome.kind === 'failed') throw outcome.error;
      return outcome.kind === 'stale' ? { stale: outcome.version } : outcome.decision;
    });
  }
}
