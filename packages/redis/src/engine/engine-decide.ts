import { type Algorithm, type Permits, systemClock } from '@sluice/core';
import type { DecideAnswer, EngineAsk, EngineRules } from '@sluice/core/engine';
import type { RedisConnection } from '../connection/connection.js';
import { DEFAULT_MAX_BATCH } from '../options.js';
import { type Answer, type Asked, DecisionTransport, type TransportListener } from '../exact/transport.js';

/** Where an ask's answer goes: its decision or `{ stale }`, or (answer undefined) the error that failed it. */
type Done = (answer: DecideAnswer | undefined, error?: unknown) => void;

/** One ask of a decide batch on its way: what the transport sends, and where its answer goes. */
class EngineAsked implements Asked {
  constructor(
    readonly key: string,
    readonly permits: Permits,
    readonly maxWaitMs: number,
    readonly now: number,
    readonly peek: boolean,
    readonly done: Done,
  ) {}
}

/** The contract's answer of a transport's (its own fields only; ruleDecidedAtMs only when the rules' times differ). */
function decideAnswerOf(answer: Answer): DecideAnswer {
  return answer.ruleDecidedAtMs === undefined
    ? { decision: answer.decision, decidedAtMs: answer.decidedAtMs, verdicts: answer.verdicts, ban: answer.ban }
    : {
        decision: answer.decision,
        decidedAtMs: answer.decidedAtMs,
        verdicts: answer.verdicts,
        ban: answer.ban,
        ruleDecidedAtMs: answer.ruleDecidedAtMs,
      };
}

/** Every ask's answer goes back to the ask itself. */
const LISTENER: TransportListener<EngineAsked> = {
  answered: (asked, answer: Answer) => asked.done(decideAnswerOf(answer)),
  failed: (asked, error) => asked.done(undefined, error),
  unsent: (asked) => asked.done(undefined, new Error('redisEngine: a decision was not sent')),
  stale: (asked, version) => asked.done({ stale: version }),
};

/** How a store's decisions travel: redisStore's `maxBatch` and `maxClockSkewMs` (defaults: 64, no clamp). */
export interface DecideBatching {
  readonly maxBatch?: number | undefined;
  readonly maxClockSkewMs?: number | undefined;
}

/** One ask decided on its own (in the transport's turn with every other caller's). */
function decideOne(transport: DecisionTransport<EngineAsked>, ask: EngineAsk): Promise<readonly DecideAnswer[]> {
  return new Promise<readonly DecideAnswer[]>((resolve, reject) =>
    transport.send(
      new EngineAsked(ask.key, ask.permits, ask.maxWaitMs, ask.at ?? Number.NaN, ask.peek, (answer, error) => {
        if (answer === undefined) reject(error);
        else resolve([answer]);
      }),
    ),
  );
}

/** What a transport was made of: a rules object's contents at the time. */
interface Snapshot {
  readonly prefix: string;
  readonly rules: readonly Algorithm[];
  readonly states: readonly string[];
  readonly version: number | undefined;
}

/** A transport and the contents it was made of. */
interface Made {
  readonly transport: DecisionTransport<EngineAsked>;
  readonly made: Snapshot;
}

function snapshotOf(rules: EngineRules): Snapshot {
  return { prefix: rules.prefix, rules: [...rules.rules], states: [...rules.states], version: rules.version };
}

function sameContents(made: Snapshot, rules: EngineRules): boolean {
  return (
    made.prefix === rules.prefix &&
    made.version === rules.version &&
    made.rules.length === rules.rules.length &&
    made.rules.every((rule, r) => rule === rules.rules[r] && made.states[r] === rules.states[r])
  );
}

/**
 * redisEngine's `decide`: exact mode's own transport (DecisionTransport: decide.lua, or decide_one.lua for a
 * lone ask of one rule; a policy across Cluster slots by CrossSlotPolicy), with no deny cache, no fail mode and
 * no health (the modes keep theirs). One transport per rules object while its contents stay (its rule text and
 * scripts are made once);
 * asks of one turn travel together, one call per slot.
 */
export class EngineDecider {
  readonly #connection: RedisConnection;
  readonly #timeoutMs: number;
  readonly #batching: DecideBatching;
  readonly #transports = new WeakMap<EngineRules, Made>();

  constructor(connection: RedisConnection, timeoutMs: number, batching: DecideBatching = {}) {
    this.#connection = connection;
    this.#timeoutMs = timeoutMs;
    this.#batching = batching;
  }

  #transport(rules: EngineRules): DecisionTransport<EngineAsked> {
    const kept = this.#transports.get(rules);
    // A caller may change its object between calls (a version raised after a stale answer): made again then.
    if (kept !== undefined && sameContents(kept.made, rules)) return kept.transport;
    const made = snapshotOf(rules);
    const names = new Map<Algorithm, string>(made.rules.map((rule, r) => [rule, made.states[r] as string]));
    const { version } = made;
    const transport = new DecisionTransport(
      {
        connection: this.#connection,
        rules: made.rules,
        prefix: made.prefix,
        stateName: (rule) => names.get(rule) as string,
        maxBatch: this.#batching.maxBatch ?? DEFAULT_MAX_BATCH,
        timeoutMs: this.#timeoutMs,
        localClock: systemClock,
        maxClockSkewMs: this.#batching.maxClockSkewMs,
        mayCall: () => true,
        version: version === undefined ? undefined : () => version,
      },
      LISTENER,
    );
    this.#transports.set(rules, { transport, made });
    return transport;
  }

  /**
   * Decides `asks` (checked by the caller), each at its own time; an ask a slot refuses under a newer
   * configuration is answered `{ stale }` (asks of other calls of the batch may have been decided).
   */
  async decide(rules: EngineRules, asks: readonly EngineAsk[]): Promise<readonly DecideAnswer[]> {
    if (asks.length === 0) return [];
    const transport = this.#transport(rules);
    if (this.#connection.isCluster && rules.rules.some((rule) => rule.scope !== undefined)) {
      // A policy whose rules may live in several slots is decided slot by slot (CrossSlotPolicy), each ask on
      // its own: asks sent together would race, and the contract decides a batch's asks in order.
      const answers: DecideAnswer[] = [];
      for (const ask of asks) answers.push((await decideOne(transport, ask))[0] as DecideAnswer);
      return answers;
    }
    const only = asks.length === 1 ? (asks[0] as EngineAsk) : undefined;
    // Exact mode asks one decision per call: its answer goes back the moment its script call's does.
    if (only !== undefined) return decideOne(transport, only);
    // The batch travels as the transport's turn does (one script call per slot), its answers gathered in order.
    return new Promise<readonly DecideAnswer[]>((resolve, reject) => {
      const answers = new Array<DecideAnswer>(asks.length);
      let left = asks.length;
      let failed = false;
      const batch = asks.map(
        (ask, i) =>
          new EngineAsked(ask.key, ask.permits, ask.maxWaitMs, ask.at ?? Number.NaN, ask.peek, (answer, error) => {
            if (failed) return;
            if (answer === undefined) {
              failed = true;
              reject(error);
              return;
            }
            answers[i] = answer;
            if (--left === 0) resolve(answers);
          }),
      );
      transport.sendAll(batch);
    });
  }
}
