import {
  type Algorithm,
  type BoundStore,
  type Clock,
  type Decision,
  type GrantSource,
  SluiceError,
} from '@sluice/core';
import type { DecisionNote } from '@sluice/core/store-kit';
import { identityOf } from '@sluice/core/store-kit';
import calculateSlot from 'cluster-key-slot';
import { CrossSlotPolicy } from './cross-slot.js';
import { withDeadline } from './deadline.js';
import type { DenyCache } from './deny-cache.js';
import { banKey, stateKey } from './key-layout.js';
import type { DecisionEvent } from './redis-store.js';
import { packGroups, packRequests, unpackReplies } from './protocol.js';
import { failModeDecision } from './fail-mode.js';
import { isKeyScopedError } from './reply-errors.js';
import { type GrantTime, adjustArgs, numArg, ruleArgs } from './rule-args.js';
import { bufferReply } from './script-runner.js';
import type { RedisConnection } from './connection/connection.js';
import { type LuaScript, adjustScript, blockScript, decideOneScript, decideScript } from './scripts.js';

interface Pending {
  readonly key: string;
  readonly permits: number;
  readonly maxWaitMs: number;
  /** The decision time in client-clock mode; NaN lets the script read Redis TIME. */
  readonly now: number;
  readonly peek: boolean;
  /** Where an observer learns which source decided (see BoundStore.consume). */
  readonly note: DecisionNote | undefined;
  resolve(decision: Decision): void;
  fail(error: unknown): void;
}

/** One script call: the script, its KEYS and its ARGV. */
interface ScriptCall {
  readonly script: LuaScript;
  readonly keys: string[];
  readonly args: Array<string | Buffer>;
}

/** What a binding needs from its store: the connection, time, and where to report health. */
export interface BindingContext {
  readonly connection: RedisConnection;
  /** The client clock, or undefined when decisions take Redis TIME. */
  readonly decisionClock: Clock | undefined;
  /** This process's clock, for deadlines and the deny cache. */
  readonly localClock: Clock;
  readonly timeoutMs: number;
  readonly failMode: 'local' | 'open' | 'closed';
  /** The most decisions one script call carries. */
  readonly maxBatch: number;
  /** With a client clock: how far a decision time may be from Redis TIME before the script clamps it. */
  readonly maxClockSkewMs: number | undefined;
  /** Already isolated: a throwing callback is reported, never thrown here. */
  readonly onDecision: ((event: DecisionEvent) => void) | undefined;
  /** False while Redis is failing: decide by the fail mode without calling it (the store probes by itself). */
  mayCallRedis(): boolean;
  /** A call succeeded: the store's health hears it. */
  reportSuccess(): void;
  /** A call failed; `stateKey` is one of its keys, where the store's probe will ask. */
  reportFailure(error: unknown, stateKey?: string): void;
}

/** What a binding holds beside the rules: its caches, fail-mode limiter, and how it reaches its store. */
export interface BindingParts {
  readonly denyCache: DenyCache | undefined;
  /** The fail mode's in-memory limiter ('local'), holding this node's share of each rule. */
  readonly local: BoundStore | undefined;
  /** Tells every node to drop a reset key from its deny cache (pub/sub). */
  readonly publishReset: ((key: string) => Promise<unknown>) | undefined;
  /**
   * Drops a key from the deny cache of every binding of this prefix here (a limiter's plans are bindings of
   * one prefix: a control under one plan changes what the others cached).
   */
  readonly forgetHere: (key: string) => void;
  /** Releases what the store holds for this binding. */
  readonly unbind: () => void;
  /**
   * A rule's part of its state keys' names: its name, unless the binding decides on states another mode
   * keeps under other names (leased mode decides a cold key exactly on the lease's central state).
   */
  readonly stateName?: (rule: Algorithm) => string;
}

/**
 * One limiter's rules on Redis. Decisions asked while a call is in flight, in the same turn of the event
 * loop, leave together, as one script call per slot, when its I/O phase ends (setImmediate): no timer, and a hot
 * key's requests fold into one state update. A flush per microtask checkpoint would batch only what one
 * callback asked: an HTTP server decides each request in its own socket callback, so it would send one
 * call per request (measured: 4 processes on one hot key made 57k decisions/s that way, 650k this way).
 * A request asked while nothing is in flight leaves at once, alone (decide_one.lua for one rule): waiting
 * for the turn's end would only add latency to a lone caller.
 * @example
 * const binding = new RedisBinding(context, [rule], 'api', { denyCache: undefined, local: undefined,
 *   publishReset: undefined, forgetHere: () => {}, unbind: () => {} })
 * const decision = await binding.consume('user:1', 1, 0)
 */
export class RedisBinding implements BoundStore {
  readonly #ctx: BindingContext;
  readonly #rules: readonly Algorithm[];
  readonly #prefix: string;
  readonly #ruleArgs: string[];
  readonly #script: LuaScript;
  /** decide_one.lua, for a batch of one when a request's keys are one call's (one rule, one slot). */
  readonly #oneScript: LuaScript | undefined;
  readonly #denials: DenyCache | undefined;
  readonly #local: BoundStore | undefined;
  readonly #crossSlot: CrossSlotPolicy | undefined;
  readonly #publishReset: ((key: string) => Promise<unknown>) | undefined;
  readonly #forgetHere: (key: string) => void;
  readonly #unbind: () => void;
  readonly #stateName: (rule: Algorithm) => string;
  /** ARGV after the rules, groups and requests: the client clock's skew bound, when there is one. */
  readonly #tailArgs: readonly string[];
  #queue: Pending[] = [];
  #scheduled = false;
  /**
   * Script calls sent and not yet answered (a batch's until the end of the turn it was answered in): with
   * none, a request leaves at once rather than at the end of the turn.
   */
  #inFlight = 0;
  #bound = true;

  readonly #landed = (): void => {
    this.#inFlight--;
  };

  readonly #flush = (): void => {
    this.#scheduled = false;
    const batch = this.#queue;
    this.#queue = [];
    if (!this.#ctx.mayCallRedis()) {
      for (const p of batch) this.#resolveByFailMode(p);
      return;
    }
    if (!this.#ctx.connection.isCluster) {
      this.#sendInChunks(batch);
      return;
    }
    // In a Cluster one script call can only touch one slot: group by slot; a request whose rules span slots
    // is decided slot by slot (CrossSlotPolicy).
    const bySlot = new Map<number, Pending[]>();
    for (const p of batch) {
      let slot: number;
      if (this.#crossSlot === undefined)
        slot = calculateSlot(stateKey(this.#prefix, p.key, this.#stateName(this.#rules[0] as Algorithm)));
      else {
        let parts: ReturnType<CrossSlotPolicy['partition']>;
        try {
          parts = this.#crossSlot.partition(p.key);
        } catch (error) {
          p.fail(error);
          continue;
        }
        if (parts.length > 1) {
          void this.#decideAcross(this.#crossSlot, p, parts);
          continue;
        }
        slot = (parts[0] as (typeof parts)[number]).slot;
      }
      const group = bySlot.get(slot);
      if (group === undefined) bySlot.set(slot, [p]);
      else group.push(p);
    }
    for (const group of bySlot.values()) this.#sendInChunks(group);
  };

  constructor(ctx: BindingContext, rules: readonly Algorithm[], prefix: string, parts: BindingParts) {
    this.#ctx = ctx;
    this.#rules = rules;
    this.#prefix = prefix;
    this.#ruleArgs = ruleArgs(rules);
    this.#script = decideScript(rules.map((rule) => rule.kind));
    const only = rules.length === 1 ? (rules[0] as Algorithm) : undefined;
    // On a Cluster a rule counted against another key lives in another slot than the key's ban.
    this.#oneScript =
      only !== undefined && (!ctx.connection.isCluster || only.key === undefined)
        ? decideOneScript(only.kind)
        : undefined;
    // Exact only for one rule whose single-permit denials hold until retryAfterMs (see Algorithm.stableDenials).
    this.#denials = rules.length === 1 && (rules[0] as Algorithm).stableDenials ? parts.denyCache : undefined;
    this.#local = parts.local;
    this.#publishReset = parts.publishReset;
    this.#forgetHere = parts.forgetHere;
    this.#unbind = parts.unbind;
    this.#stateName = parts.stateName ?? ((rule) => rule.name);
    this.#tailArgs = ctx.maxClockSkewMs === undefined ? [] : [numArg(ctx.maxClockSkewMs)];
    // On a Cluster, rules counted against other keys may live in other slots than the request key's (and its ban).
    this.#crossSlot =
      ctx.connection.isCluster && rules.some((rule) => rule.key !== undefined)
        ? new CrossSlotPolicy(
            ctx.connection,
            rules,
            prefix,
            (promise) => withDeadline(promise, ctx.timeoutMs, 'a cross-slot decision'),
            this.#tailArgs,
          )
        : undefined;
    if (this.#crossSlot !== undefined && parts.stateName !== undefined)
      throw new Error('stateName names the states of rules counted against the request key only');
  }

  consume(key: string, permits: number, maxWaitMs: number, note?: DecisionNote): Decision | Promise<Decision> {
    if (this.#denials !== undefined && permits === 1 && maxWaitMs === 0) {
      const now = this.#ctx.localClock.now();
      const cached = this.#denials.get(key, now);
      if (cached !== undefined) {
        if (note !== undefined) note.source = 'deny_cache';
        this.#ctx.onDecision?.({ prefix: this.#prefix, key, decision: cached, source: 'deny_cache', decidedAtMs: now });
        return cached;
      }
    }
    // A request on its way to Redis may change the key (a grant, a reservation): until its answer is back,
    // no cached denial for the key may be trusted, here or under the limiter's other plans.
    this.#forgetHere(key);
    return this.#enqueue(key, permits, maxWaitMs, false, note);
  }

  peek(key: string): Promise<Decision> {
    return this.#enqueue(key, 1, 0, true, undefined);
  }

  /**
   * Forgets the request key's own rules (rules counted against other identities are shared, and stay) and
   * its ban, here, in the fail mode's limiter and on Redis, and tells every node to drop it from its deny
   * cache. Bounded by timeoutMs like a decision; a reset Redis could not do (down, read-only) rejects with
   * SluiceError('STORE_UNAVAILABLE'), since no fail mode can stand in for it.
   */
  async reset(key: string): Promise<void> {
    this.#forgetHere(key);
    await this.#local?.reset(key);
    const own = this.#rules
      .filter((rule) => rule.key === undefined)
      .map((rule) => stateKey(this.#prefix, key, this.#stateName(rule)));
    await this.#onRedis(key, 'reset', own[0] ?? banKey(this.#prefix, key), async () => {
      await this.#ctx.connection.del([...own, banKey(this.#prefix, key)]);
      await this.#publishReset?.(key);
    });
  }

  /**
   * Gives back up to `permits` to the key's own rules where the grant was counted: a fail mode's grant to the
   * fail mode's limiter ('local'; 'open' counted it nowhere, so nothing is given back), a Redis grant to Redis
   * in one atomic script call (they share the key's slot), never to the fail mode, which never counted it (a
   * refund Redis cannot take then rejects with STORE_UNAVAILABLE). A grant of unknown origin goes wherever
   * decisions go now (see #control).
   */
  async refund(key: string, permits: number, grantedAgoMs: number, grant?: GrantSource): Promise<void> {
    // A denial cached here may have become a grant.
    this.#forgetHere(key);
    const own = this.#rules.filter((rule) => rule.key === undefined);
    if (own.length === 0) return;
    const locally = () => this.#local?.refund?.(key, permits, grantedAgoMs);
    if (grant === 'fallback') {
      await locally();
      return;
    }
    const granted = Number.isNaN(grantedAgoMs) ? undefined : { agoMs: grantedAgoMs };
    const onRedis = () => this.#adjust(own, key, 'refund', permits, granted);
    if (grant === 'store') {
      if (!this.#ctx.mayCallRedis())
        throw new SluiceError(
          'STORE_UNAVAILABLE',
          `refund(${JSON.stringify(key)}): Redis counted this grant and is away; the fail mode never counted it`,
        );
      await this.#onRedis(key, 'refund', stateKey(this.#prefix, key, this.#stateName(own[0] as Algorithm)), onRedis);
      return;
    }
    await this.#control(key, 'refund', locally, onRedis);
  }

  /** Takes `permits` from every rule the key is counted against, one atomic call per slot. See #control. */
  async penalize(key: string, permits: number): Promise<void> {
    // A denial cached here would now be told too short a wait.
    this.#forgetHere(key);
    const bySlot = new Map<number, Algorithm[]>();
    for (const rule of this.#rules) {
      const slot = this.#ctx.connection.isCluster
        ? calculateSlot(stateKey(this.#prefix, identityOf(rule, key), this.#stateName(rule)))
        : 0;
      bySlot.set(slot, [...(bySlot.get(slot) ?? []), rule]);
    }
    await this.#control(
      key,
      'penalize',
      () => this.#local?.penalize?.(key, permits),
      () =>
        Promise.all([...bySlot.values()].map((rules) => this.#adjust(rules, key, 'penalize', permits, undefined))).then(
          () => undefined,
        ),
    );
  }

  /** Bans the key (block.lua keeps a longer ban in force). See #control. */
  async block(key: string, ms: number): Promise<void> {
    this.#forgetHere(key);
    const now = this.#ctx.decisionClock?.now();
    await this.#control(
      key,
      'block',
      () => this.#local?.block?.(key, ms),
      async () => {
        await this.#ctx.connection.runScript(
          blockScript(),
          [banKey(this.#prefix, key)],
          [numArg(ms), now === undefined ? '' : numArg(now)],
        );
      },
    );
  }

  /** Lifts the key's ban, and tells every node to drop the key from its deny cache. See #control. */
  async unblock(key: string): Promise<void> {
    this.#forgetHere(key);
    await this.#control(
      key,
      'unblock',
      () => this.#local?.unblock?.(key),
      async () => {
        await this.#ctx.connection.del([banKey(this.#prefix, key)]);
        await this.#publishReset?.(key);
      },
    );
  }

  /** One atomic adjust.lua call for `rules` of `key` (all in one slot). */
  async #adjust(
    rules: readonly Algorithm[],
    key: string,
    op: 'refund' | 'penalize',
    permits: number,
    granted: GrantTime | undefined,
  ): Promise<void> {
    const keys = rules.map((rule) => stateKey(this.#prefix, identityOf(rule, key), this.#stateName(rule)));
    const args = adjustArgs(ruleArgs(rules), op, permits, granted, this.#ctx.decisionClock?.now());
    await this.#ctx.connection.runScript(adjustScript(rules.map((rule) => rule.kind)), keys, args);
  }

  /**
   * A control (refund, penalize, block, unblock) on Redis, bounded by timeoutMs. While Redis is away, or when
   * the call fails, failMode 'local' applies it to its in-memory limiter instead (the one deciding then) and
   * resolves; 'open' and 'closed' keep no state to apply it to, so the call rejects with
   * SluiceError('STORE_UNAVAILABLE').
   */
  async #control(key: string, what: string, locally: () => unknown, onRedis: () => Promise<void>): Promise<void> {
    if (this.#ctx.mayCallRedis()) {
      try {
        await this.#onRedis(
          key,
          what,
          stateKey(this.#prefix, key, this.#stateName(this.#rules[0] as Algorithm)),
          onRedis,
        );
        return;
      } catch (error) {
        if (this.#local === undefined) throw error;
      }
    } else if (this.#local === undefined) {
      throw new SluiceError(
        'STORE_UNAVAILABLE',
        `${what}(${JSON.stringify(key)}) could not reach Redis, and failMode '${this.#ctx.failMode}' keeps no ` +
          `state to apply it to`,
      );
    }
    await locally();
  }

  /** Runs `call` on Redis within timeoutMs; a failure is reported to the store's health and rejects as STORE_UNAVAILABLE. */
  async #onRedis(key: string, what: string, probeKey: string, call: () => Promise<void>): Promise<void> {
    try {
      await withDeadline(call(), this.#ctx.timeoutMs, what);
      this.#ctx.reportSuccess();
    } catch (error) {
      if (!isKeyScopedError(error)) this.#ctx.reportFailure(error, probeKey);
      const why = error instanceof Error ? error.message : String(error);
      throw new SluiceError('STORE_UNAVAILABLE', `${what}(${JSON.stringify(key)}) could not be done on Redis: ${why}`, {
        cause: error,
      });
    }
  }

  unbind(): void {
    if (!this.#bound) return;
    this.#bound = false;
    this.#unbind();
  }

  /** Drops the key from this node's deny cache (a reset here or, through pub/sub, on another node). */
  forget(key: string): void {
    this.#denials?.delete(key);
  }

  #enqueue(
    key: string,
    permits: number,
    maxWaitMs: number,
    peek: boolean,
    note: DecisionNote | undefined,
  ): Promise<Decision> {
    const clock = this.#ctx.decisionClock;
    return new Promise<Decision>((resolve, fail) => {
      this.#queue.push({
        key,
        permits,
        maxWaitMs,
        now: clock === undefined ? Number.NaN : clock.now(),
        peek,
        note,
        resolve,
        fail,
      });
      if (this.#scheduled) return;
      if (this.#inFlight === 0) {
        this.#flush();
        return;
      }
      this.#scheduled = true;
      setImmediate(this.#flush);
    });
  }

  /**
   * Sends at most maxBatch decisions per script call. Several calls then travel pipelined on one connection:
   * the first chunk's callers are answered, and ask again, while Redis still works on the rest, so the
   * client and the server work at the same time instead of taking turns. With no other call in flight a
   * batch of several keys leaves as two calls at least: otherwise a few callers (16 in flight) would all
   * ride one call and wait for it together (ioredis, 10,000 keys, 16 in flight: 86k decisions/s in one
   * call, 118k in two; node-redis, whose calls cost the client more, 80k and 75k; at 128 in flight batches
   * of 64 already travel several at a time). One hot key's requests fold into one update: kept together.
   */
  #sendInChunks(group: Pending[]): void {
    const several = group.length > 1 && (group[0] as Pending).key !== (group[group.length - 1] as Pending).key;
    const max =
      this.#inFlight === 0 && several ? Math.min(this.#ctx.maxBatch, Math.ceil(group.length / 2)) : this.#ctx.maxBatch;
    if (group.length <= max) {
      void this.#send(group);
      return;
    }
    for (let i = 0; i < group.length; i += max) void this.#send(group.slice(i, i + max));
  }

  /** The script call that decides `group` (one slot's requests): decide_one.lua for one request when it can. */
  #call(group: Pending[]): ScriptCall {
    const first = group[0] as Pending;
    if (group.length === 1 && this.#oneScript !== undefined) {
      const rule = this.#rules[0] as Algorithm;
      return {
        script: this.#oneScript,
        keys: [
          stateKey(this.#prefix, identityOf(rule, first.key), this.#stateName(rule)),
          banKey(this.#prefix, first.key),
        ],
        args: [
          ...this.#ruleArgs,
          Number.isNaN(first.now) ? '' : numArg(first.now),
          numArg(first.permits),
          numArg(first.maxWaitMs),
          first.peek ? '1' : '0',
          ...this.#tailArgs,
        ],
      };
    }
    // Every distinct state key once (a global rule's key is shared by every request), and per request key
    // a group: the indices of its rules' state keys.
    const keyIndex = new Map<string, number>();
    const keys: string[] = [];
    const groupIndex = new Map<string, number>();
    const groups: number[][] = [];
    const wire = group.map((p) => {
      let g = groupIndex.get(p.key);
      if (g === undefined) {
        const indexOf = (name: string): number => {
          let k = keyIndex.get(name);
          if (k === undefined) {
            keys.push(name);
            k = keys.length;
            keyIndex.set(name, k);
          }
          return k;
        };
        const group = this.#rules.map((rule) =>
          indexOf(stateKey(this.#prefix, identityOf(rule, p.key), this.#stateName(rule))),
        );
        group.push(indexOf(banKey(this.#prefix, p.key)));
        groups.push(group);
        g = groups.length;
        groupIndex.set(p.key, g);
      }
      return { group: g, now: p.now, permits: p.permits, maxWaitMs: p.maxWaitMs, peek: p.peek };
    });
    return {
      script: this.#script,
      keys,
      args: [...this.#ruleArgs, packGroups(groups), packRequests(wire), ...this.#tailArgs],
    };
  }

  async #send(group: Pending[]): Promise<void> {
    let call: ScriptCall;
    try {
      call = this.#call(group);
    } catch (error) {
      // A rule's key function failed: a developer error, reported to every caller of this batch.
      for (const p of group) p.fail(error);
      return;
    }
    const { script, keys, args } = call;
    // Redis decides after this instant, so a denial cached from it can only end early, never late.
    const sentAt = this.#ctx.localClock.now();
    let reply: Buffer;
    this.#inFlight++;
    try {
      reply = bufferReply(
        await withDeadline(this.#ctx.connection.runScript(script, keys, args), this.#ctx.timeoutMs, 'a decision'),
        script.name,
      );
      this.#ctx.reportSuccess();
    } catch (error) {
      if (isKeyScopedError(error)) {
        // Redis answered, about one of these keys: the store is healthy and the other keys must not pay for
        // it. Each request is tried alone; one that fails alone is decided by the fail mode, alone.
        if (group.length > 1) for (const p of group) void this.#send([p]);
        else this.#resolveByFailMode(group[0] as Pending);
        return;
      }
      this.#ctx.reportFailure(error, keys[0]);
      for (const p of group) this.#resolveByFailMode(p);
      return;
    } finally {
      // A batch's callers ask again in this same turn: they leave together at its end, as one call, rather
      // than the first alone and the rest behind it. A lone caller's next request leaves at once.
      if (group.length > 1) setImmediate(this.#landed);
      else this.#inFlight--;
    }
    const decoded = unpackReplies(reply, group.length, this.#rules, (q) => group[q] as Pending);
    group.forEach((p, q) => {
      const { decision, decidedAtMs, ban } = decoded[q] as (typeof decoded)[number];
      // The fail mode's limiter learns of bans, so a key banned on Redis stays banned through an outage.
      if (ban !== undefined && !p.peek) {
        void this.#local?.block?.(p.key, ban.restMs);
        // Another plan's binding may hold an older denial of the key that does not know of the ban.
        this.#forgetHere(p.key);
      }
      if (p.note !== undefined) p.note.source = 'redis';
      this.#ctx.onDecision?.({ prefix: this.#prefix, key: p.key, decision, source: 'redis', decidedAtMs });
      if (this.#denials !== undefined && !p.peek) {
        if (p.permits === 1 && p.maxWaitMs === 0) this.#denials.record(p.key, decision, sentAt, ban?.restMs);
        else if (decision.allowed) this.#denials.delete(p.key);
      }
      p.resolve(decision);
    });
  }

  async #decideAcross(
    policy: CrossSlotPolicy,
    p: Pending,
    parts: ReturnType<CrossSlotPolicy['partition']>,
  ): Promise<void> {
    try {
      const { decision, ruleDecidedAtMs } = await policy.decide(
        { key: p.key, permits: p.permits, now: p.now, peek: p.peek },
        parts,
      );
      this.#ctx.reportSuccess();
      // Each slot decided at its own time: the grant stands from the last of them.
      const decidedAtMs = Math.max(...ruleDecidedAtMs);
      if (p.note !== undefined) p.note.source = 'redis';
      this.#ctx.onDecision?.({
        prefix: this.#prefix,
        key: p.key,
        decision,
        source: 'redis',
        decidedAtMs,
        ruleDecidedAtMs,
      });
      p.resolve(decision);
    } catch (error) {
      if (!isKeyScopedError(error))
        this.#ctx.reportFailure(error, stateKey(this.#prefix, p.key, this.#stateName(this.#rules[0] as Algorithm)));
      this.#resolveByFailMode(p);
    }
  }

  #resolveByFailMode(p: Pending): void {
    // Marked, so the caller knows the fleet's count was not consulted and a refund knows where to go.
    const decision: Decision = { ...this.#fallback(p), source: 'fallback' };
    if (p.note !== undefined) p.note.source = 'fallback';
    this.#ctx.onDecision?.({
      prefix: this.#prefix,
      key: p.key,
      decision,
      source: 'fallback',
      decidedAtMs: this.#ctx.localClock.now(),
    });
    p.resolve(decision);
  }

  /**
   * Decides without Redis, as the fail mode says: 'local' from an in-memory limiter with the same rules,
   * 'open' allows, 'closed' denies and asks to retry after timeoutMs.
   */
  #fallback(p: Pending): Decision {
    if (this.#local !== undefined) {
      return (p.peek ? this.#local.peek(p.key) : this.#local.consume(p.key, p.permits, p.maxWaitMs)) as Decision;
    }
    return failModeDecision(
      this.#rules[0] as Algorithm,
      this.#ctx.failMode === 'open' ? 'open' : 'closed',
      p.permits,
      this.#ctx.timeoutMs,
    );
  }
}
