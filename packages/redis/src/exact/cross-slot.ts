import type { Algorithm, Decision, Permits } from '@sluice/core';
import { EXPLICIT_BAN, type RuleVerdict, blockedDecision, identityOf, mergePolicy } from '@sluice/core/internal';
import calculateSlot from 'cluster-key-slot';
import { banKey, banMarkerKey, stateKey } from '../key-layout.js';
import {
  type WireDecision,
  packGroups,
  packRequests,
  unpackBanReplies,
  unpackReplies,
  wirePermits,
  withPermitRows,
} from './protocol.js';
import { adjustArgs, ruleArgs } from './rule-args.js';
import type { RedisConnection } from '../connection/connection.js';
import { bufferReply } from '../script-runner.js';
import { type LuaScript, adjustScript, decideScript } from '../scripts.js';

/** The rules of one slot of a policy, with their scripts and ARGV ready. */
interface Part {
  readonly indices: readonly number[];
  readonly rules: readonly Algorithm[];
  readonly args: readonly string[];
  readonly decide: LuaScript;
  readonly adjust: LuaScript;
}

/** The rules of `key` in one slot: their indices, their state keys, and the key's ban when it lives in this slot. */
export interface SlotPart {
  readonly slot: number;
  readonly indices: number[];
  readonly keys: string[];
  /** The key's ban (in the request key's own slot only; that part comes first, with or without rules). */
  ban: string | undefined;
}

export interface CrossSlotRequest {
  readonly key: string;
  readonly permits: Permits;
  /** Client-clock now, or NaN for Redis TIME. */
  readonly now: number;
  readonly peek: boolean;
}

/**
 * A policy whose rules' state keys live in different Cluster slots (a global rule beside per-user rules).
 * One script call can touch only one slot, so the rules are decided slot by slot, the request key's own
 * slot first (its rules, and its ban: a blocked key's other slots are only looked at); when a later slot
 * refuses, the permits taken in earlier slots are given back. Every permit is taken before the grant, so
 * the fleet is never over a limit; between a take and its refund, other requests may be refused that would
 * have passed (a short under-admission, never an over-admission).
 */
export class CrossSlotPolicy {
  readonly #parts = new Map<string, Part>();

  constructor(
    private readonly connection: RedisConnection,
    private readonly rules: readonly Algorithm[],
    private readonly prefix: string,
    /** A rule's part of its state keys' names (see TransportOptions.stateName). */
    private readonly stateName: (rule: Algorithm) => string,
    private readonly timeout: <T>(promise: Promise<T>) => Promise<T>,
    /** ARGV after the requests (the client clock's skew bound). */
    private readonly tailArgs: readonly string[] = [],
  ) {}

  /**
   * The rules of `key` grouped by slot, the request key's own slot first: it holds the key's ban, and is a
   * part of its own (no rules) when none of the rules lives there. One part when everything shares a slot.
   */
  partition(key: string): SlotPart[] {
    const bySlot = new Map<number, SlotPart>();
    this.rules.forEach((rule, r) => {
      const name = stateKey(this.prefix, identityOf(rule, key), this.stateName(rule));
      const slot = calculateSlot(name);
      let part = bySlot.get(slot);
      if (part === undefined) bySlot.set(slot, (part = { slot, indices: [], keys: [], ban: undefined }));
      part.indices.push(r);
      part.keys.push(name);
    });
    const ban = banKey(this.prefix, key);
    const ownSlot = calculateSlot(ban);
    let own = bySlot.get(ownSlot);
    if (own === undefined) bySlot.set(ownSlot, (own = { slot: ownSlot, indices: [], keys: [], ban: undefined }));
    own.ban = ban;
    return [...bySlot.values()].sort((a, b) => (a.slot === ownSlot ? -1 : b.slot === ownSlot ? 1 : a.slot - b.slot));
  }

  #part(indices: readonly number[]): Part {
    const id = indices.join(',');
    let part = this.#parts.get(id);
    if (part === undefined) {
      const rules = indices.map((r) => this.rules[r] as Algorithm);
      const kinds = rules.map((rule) => rule.kind);
      part = { indices, rules, args: ruleArgs(rules), decide: decideScript(kinds), adjust: adjustScript(kinds) };
      this.#parts.set(id, part);
    }
    return part;
  }

  /** One slot's verdicts for the request (its ban checked there when `slot.ban` is set). */
  async #decidePart(
    part: Part,
    slot: SlotPart,
    request: CrossSlotRequest,
    peek: boolean,
  ): Promise<
    Pick<WireDecision, 'decision' | 'verdicts' | 'ban' | 'decidedAtMs'> | Pick<WireDecision, 'ban' | 'decidedAtMs'>
  > {
    // The ban, where this slot holds it, follows the states, and the slot's ban marker follows it.
    const keys = slot.ban === undefined ? slot.keys : [...slot.keys, slot.ban, banMarkerKey(this.prefix, slot.slot)];
    const group = [...slot.keys.map((_, i) => i + 1), slot.ban === undefined ? 0 : slot.keys.length + 1];
    const permits = wirePermits(request.permits, part.rules);
    const packed = packRequests([{ group: 1, now: request.now, permits, maxWaitMs: 0, peek }]);
    const reply = bufferReply(
      await this.timeout(
        this.connection.runScript(part.decide, keys, [
          ...part.args,
          packGroups([group]),
          packed.requests,
          ...withPermitRows(this.tailArgs, packed.permitRows),
        ]),
      ),
      part.decide.name,
    );
    if (part.rules.length === 0) return unpackBanReplies(reply, 1)[0] as Pick<WireDecision, 'ban' | 'decidedAtMs'>;
    return unpackReplies(reply, 1, part.rules, () => ({ permits: request.permits, peek }))[0] as WireDecision;
  }

  async #refund(
    part: Part,
    keys: readonly string[],
    permits: Permits,
    decidedAtMs: number,
    now: number,
  ): Promise<void> {
    await this.timeout(
      this.connection.runScript(
        part.adjust,
        keys,
        adjustArgs(part.args, 'refund', wirePermits(permits, part.rules), { atMs: decidedAtMs }, now),
      ),
    );
  }

  /**
   * Decides a request across slots. Throws only when Redis fails; whatever was taken before the failure
   * has been given back by then (as far as Redis allowed).
   */
  async decide(
    request: CrossSlotRequest,
    partitions: ReturnType<CrossSlotPolicy['partition']>,
  ): Promise<{
    decision: Decision;
    ruleDecidedAtMs: number[];
    verdicts: RuleVerdict[];
    ban: { rule: number; restMs: number } | undefined;
  }> {
    const granted: Array<{ part: Part; keys: string[]; decidedAtMs: number }> = [];
    const verdicts: RuleVerdict[] = new Array(this.rules.length);
    const ruleDecidedAtMs: number[] = new Array(this.rules.length).fill(Number.NaN);
    let refused = false;
    // Refunds run at most once, whatever fails: giving back twice would over-admit. A refund that fails
    // leaves its permits taken (an under-admission until the state expires), never the reverse.
    let refunding = false;
    const refundAll = () => {
      refunding = true;
      return Promise.allSettled(
        granted.map((g) => this.#refund(g.part, g.keys, request.permits, g.decidedAtMs, request.now)),
      );
    };
    // A blocked key: the banning rule's index among all rules (-1: explicit) and the rest of the ban.
    let ban: { rule: number; restMs: number } | undefined;
    try {
      for (const slot of partitions) {
        const part = this.#part(slot.indices);
        // Once a slot refused (or the key is blocked), the rest are only looked at (for the rule statuses).
        const decided = await this.#decidePart(part, slot, request, request.peek || refused);
        if (decided.ban !== undefined) {
          const rule = decided.ban.rule === EXPLICIT_BAN ? EXPLICIT_BAN : (slot.indices[decided.ban.rule] as number);
          ban = { rule, restMs: decided.ban.restMs };
          refused = true;
        }
        if (!('verdicts' in decided)) continue;
        slot.indices.forEach((r, i) => {
          verdicts[r] = decided.verdicts[i] as RuleVerdict;
          ruleDecidedAtMs[r] = decided.decidedAtMs;
        });
        if (!decided.decision.allowed) refused = true;
        else if (!request.peek && !refused) granted.push({ part, keys: slot.keys, decidedAtMs: decided.decidedAtMs });
      }
      if (refused) await refundAll();
    } catch (error) {
      if (!refunding) await refundAll();
      throw error;
    }
    // The one policy merge (or the one answer for a blocked key): what was refunded or only looked at took
    // nothing, as the memory store reports it.
    const decision =
      ban !== undefined
        ? blockedDecision(this.rules, verdicts, ban.rule, ban.restMs, request.permits)
        : mergePolicy(this.rules, verdicts, request.permits, request.peek);
    return { decision, ruleDecidedAtMs, verdicts, ban };
  }
}
