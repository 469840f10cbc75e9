import { type Algorithm, type Decision } from '@sluice/core';
import { type RuleVerdict, identityOf, mergePolicy } from '@sluice/core/store-kit';
import calculateSlot from 'cluster-key-slot';
import { stateKey } from './key-layout.js';
import { type WireDecision, packGroups, packRequests, unpackReplies } from './protocol.js';
import { refundArgs, ruleArgs } from './rule-args.js';
import type { RedisConnection } from './connection/connection.js';
import { bufferReply } from './script-runner.js';
import { type LuaScript, decideScript, refundScript } from './scripts.js';

/** The rules of one slot of a policy, with their scripts and ARGV ready. */
interface Part {
  readonly indices: readonly number[];
  readonly rules: readonly Algorithm[];
  readonly args: readonly string[];
  readonly decide: LuaScript;
  readonly refund: LuaScript;
}

export interface CrossSlotRequest {
  readonly key: string;
  readonly permits: number;
  /** Client-clock now, or NaN for Redis TIME. */
  readonly now: number;
  readonly peek: boolean;
}

/**
 * A policy whose rules' state keys live in different Cluster slots (a global rule beside per-user rules).
 * One script call can touch only one slot, so the rules are decided slot by slot, the request key's own
 * rules first; when a later slot refuses, the permits taken in earlier slots are given back. Every permit is
 * taken before the grant, so the fleet is never over a limit; between a take and its refund, other requests
 * may be refused that would have passed (a short under-admission, never an over-admission).
 */
export class CrossSlotPolicy {
  readonly #parts = new Map<string, Part>();

  constructor(
    private readonly connection: RedisConnection,
    private readonly rules: readonly Algorithm[],
    private readonly prefix: string,
    private readonly timeout: <T>(promise: Promise<T>) => Promise<T>,
    /** ARGV after the requests (the client clock's skew bound). */
    private readonly tailArgs: readonly string[] = [],
  ) {}

  /** The rules of `key` grouped by slot, own-key rules' slot first; one group when they share a slot. */
  partition(key: string): Array<{ slot: number; indices: number[]; keys: string[] }> {
    const bySlot = new Map<number, { slot: number; indices: number[]; keys: string[] }>();
    this.rules.forEach((rule, r) => {
      const name = stateKey(this.prefix, identityOf(rule, key), rule.name);
      const slot = calculateSlot(name);
      let part = bySlot.get(slot);
      if (part === undefined) bySlot.set(slot, (part = { slot, indices: [], keys: [] }));
      part.indices.push(r);
      part.keys.push(name);
    });
    const ownSlot = calculateSlot(stateKey(this.prefix, key, 'x'));
    return [...bySlot.values()].sort((a, b) => (a.slot === ownSlot ? -1 : b.slot === ownSlot ? 1 : a.slot - b.slot));
  }

  #part(indices: readonly number[]): Part {
    const id = indices.join(',');
    let part = this.#parts.get(id);
    if (part === undefined) {
      const rules = indices.map((r) => this.rules[r] as Algorithm);
      const kinds = rules.map((rule) => rule.kind);
      part = { indices, rules, args: ruleArgs(rules), decide: decideScript(kinds), refund: refundScript(kinds) };
      this.#parts.set(id, part);
    }
    return part;
  }

  async #decidePart(part: Part, keys: readonly string[], request: CrossSlotRequest, peek: boolean): Promise<WireDecision> {
    const reply = await this.timeout(
      this.connection.runScript(part.decide, keys, [
        ...part.args,
        packGroups([keys.map((_, i) => i + 1)]),
        packRequests([{ group: 1, now: request.now, permits: request.permits, maxWaitMs: 0, peek }]),
        ...this.tailArgs,
      ]),
    );
    return unpackReplies(bufferReply(reply, part.decide.name), 1, part.rules, () => ({ permits: request.permits, peek }))[0] as WireDecision;
  }

  async #refund(part: Part, keys: readonly string[], permits: number, decidedAtMs: number, now: number): Promise<void> {
    await this.timeout(this.connection.runScript(part.refund, keys, refundArgs(part.args, permits, decidedAtMs, now)));
  }

  /**
   * Decides a request across slots. Throws only when Redis fails; whatever was taken before the failure
   * has been given back by then (as far as Redis allowed).
   */
  async decide(request: CrossSlotRequest, partitions: ReturnType<CrossSlotPolicy['partition']>): Promise<{ decision: Decision; ruleDecidedAtMs: number[] }> {
    const granted: Array<{ part: Part; keys: string[]; decidedAtMs: number }> = [];
    const verdicts: RuleVerdict[] = new Array(this.rules.length);
    const ruleDecidedAtMs: number[] = new Array(this.rules.length).fill(Number.NaN);
    let refused = false;
    // Refunds run at most once, whatever fails: giving back twice would over-admit. A refund that fails
    // leaves its permits taken (an under-admission until the state expires), never the reverse.
    let refunding = false;
    const refundAll = () => {
      refunding = true;
      return Promise.allSettled(granted.map((g) => this.#refund(g.part, g.keys, request.permits, g.decidedAtMs, request.now)));
    };
    try {
      for (const { indices, keys } of partitions) {
        const part = this.#part(indices);
        // Once a slot refused, the rest are only looked at (for the decision's rule statuses).
        const decided = await this.#decidePart(part, keys, request, request.peek || refused);
        indices.forEach((r, i) => {
          verdicts[r] = decided.verdicts[i] as RuleVerdict;
          ruleDecidedAtMs[r] = decided.decidedAtMs;
        });
        if (!decided.decision.allowed) refused = true;
        else if (!request.peek && !refused) granted.push({ part, keys, decidedAtMs: decided.decidedAtMs });
      }
      if (refused) await refundAll();
    } catch (error) {
      if (!refunding) await refundAll();
      throw error;
    }
    // The one policy merge: what was refunded or only looked at took nothing, as the memory store reports it.
    return { decision: mergePolicy(this.rules, verdicts, request.permits, request.peek), ruleDecidedAtMs };
  }
}
