import type { Algorithm, Clock, Decision, Permits } from '@sluice/core';
import { DeadlineError, type RuleVerdict, identityOf, permitsOfRule, withDeadline } from '@sluice/core/internal';
import calculateSlot from 'cluster-key-slot';
import type { RedisConnection, ScriptReply } from '../connection/connection.js';
import { banKey, banMarkerKey, stateKey, versionKeyBeside } from '../key-layout.js';
import { isKeyScopedError, versionError } from '../reply-errors.js';
import { bufferReply } from '../script-runner.js';
import { type LuaScript, decideOneScript, decideScript } from '../scripts.js';
import { CrossSlotPolicy } from './cross-slot.js';
import { packGroups, packRequests, unpackReplies, wirePermits, withPermitRows } from './protocol.js';
import { numArg, ruleArgs } from './rule-args.js';

/** One decision asked of Redis. A caller's own object (it carries where the answer goes), read, never kept. */
export interface Asked {
  readonly key: string;
  /** One count of every rule, or each rule's own (per-rule permits). */
  readonly permits: Permits;
  readonly maxWaitMs: number;
  /** The decision time in client-clock mode; NaN lets the script read Redis TIME. */
  readonly now: number;
  readonly peek: boolean;
}

/** What Redis answered for one request. */
export interface Answer {
  readonly decision: Decision;
  /** Redis TIME or the client clock, as the script decided with it (for a policy across slots, the latest). */
  readonly decidedAtMs: number;
  /** For a policy decided slot by slot: each rule's slot's decision time, in rule order (NaN: not reached). */
  readonly ruleDecidedAtMs: readonly number[] | undefined;
  /** The rest of the key's ban when the key is blocked. */
  readonly banRestMs: number | undefined;
  /** Who set that ban: the banning rule's index, or EXPLICIT_BAN for `block()` (undefined: not blocked). */
  readonly banRule: number | undefined;
  /** This process's clock when the call left: Redis decided after it, so a denial cached from it ends early, never late. */
  readonly sentAtMs: number;
  /** Each rule's own verdict, in rule order (an engine answers them: see redisEngine). */
  readonly verdicts: readonly RuleVerdict[];
  /** When the key is blocked: the banning rule's index (EXPLICIT_BAN: `block`) and the rest of the ban, as decided. */
  readonly ban: { readonly rule: number; readonly restMs: number } | undefined;
}

/** Where the transport's answers go: the binding that asked. */
export interface TransportListener<A extends Asked> {
  answered(asked: A, answer: Answer): void;
  /** Redis did not answer in time, or answered an error; `stateKey` is one of the call's keys (for a probe). */
  failed(asked: A, error: unknown, stateKey: string): void;
  /** Not sent: the gate was closed when its batch left (Redis is known to be failing). */
  unsent(asked: A): void;
  /**
   * Redis answered after the deadline (the caller was answered by the fail mode meanwhile): what Redis decided
   * stands there, and the fail mode need not count it again.
   */
  late?(asked: A, answer: Answer): void;
  /** The slot's configuration is newer (`version`) than the one this transport decides under: nothing was decided. */
  stale?(asked: A, version: number): void;
}

/** What a transport needs: the connection, the rules and their key layout, and how it batches and waits. */
export interface TransportOptions {
  readonly connection: RedisConnection;
  readonly rules: readonly Algorithm[];
  readonly prefix: string;
  /** A rule's part of its state keys' names (its name, unless the states are another mode's: see ExactParts). */
  readonly stateName: (rule: Algorithm) => string;
  /** The most decisions one script call carries. */
  readonly maxBatch: number;
  readonly timeoutMs: number;
  /** This process's clock, for `sentAtMs`. */
  readonly localClock: Clock;
  /** With a client clock: how far a decision time may be from Redis TIME before the script clamps it. */
  readonly maxClockSkewMs: number | undefined;
  /**
   * Read when a batch leaves: false while Redis is known to be failing, so requests queued before the failure
   * was known are handed back at once (`unsent`) instead of each waiting out its deadline.
   */
  readonly mayCall: () => boolean;
  /**
   * The configuration version the rules are (limiter.reconfigure): every call sends it with its slot's
   * version key, and a slot whose configuration is newer answers `stale`. Undefined: not checked.
   */
  readonly version?: (() => number) | undefined;
}

/** One script call: the script, its KEYS and its ARGV. */
interface ScriptCall {
  readonly script: LuaScript;
  readonly keys: string[];
  readonly args: Array<string | Buffer>;
}

/**
 * Carries one limiter's decisions to Redis and their answers back, and knows nothing of what a decision
 * means: no deny cache, no fail mode, no health (its listener has those). Decisions asked while a call is in
 * flight, in the same turn of the event loop, leave together, as one script call per Cluster slot, when its
 * I/O phase ends (setImmediate): no timer, and a hot key's requests fold into one state update. A flush per
 * microtask checkpoint would batch only what one callback asked: an HTTP server decides each request in its
 * own socket callback, so it would send one call per request (measured: 4 processes on one hot key made 57k
 * decisions/s that way, 650k this way). A request asked while nothing is in flight leaves at once, alone
 * (decide_one.lua for one rule): waiting for the turn's end would only add latency to a lone caller.
 * @example
 * const transport = new DecisionTransport(options, binding) // binding.answered / binding.failed get the answers
 * transport.send({ key: 'user:1', permits: 1, maxWaitMs: 0, now: Number.NaN, peek: false })
 */
export class DecisionTransport<A extends Asked> {
  readonly #o: TransportOptions;
  readonly #listener: TransportListener<A>;
  /**
   * The rules as the scripts read them. (Not `#ruleArgs`: the CommonJS build rewrote an assignment to a
   * private field named like an exported function as an assignment to that export, breaking `ruleArgs`.)
   */
  readonly #rulesArg: string[];
  readonly #script: LuaScript;
  /** Calls that missed their deadline and may still be answered (see lateCallsSettled). */
  readonly #lateCalls = new Set<Promise<ScriptReply>>();
  /** decide_one.lua, for a batch of one when a request's keys are one call's (one rule, one slot). */
  readonly #oneScript: LuaScript | undefined;
  /** On a Cluster, rules counted against other keys may live in other slots than the request key's (and its ban). */
  readonly #crossSlot: CrossSlotPolicy | undefined;
  /** ARGV after the rules, groups and requests: the client clock's skew bound, when there is one. */
  readonly #tailArgs: readonly string[];
  /** ARGV after the requests of this transport's own calls: the skew bound ('' none) when versions are checked. */
  readonly #skewArg: string;
  #queue: A[] = [];
  /**
   * The configuration version the queued requests were asked under (versions checked): they are sent under
   * it, not under the version in force when they leave. A request asked before this node learned of an
   * override of its key was routed to the limiter's rules; sent under the new version, the slot would take
   * it as decided under the override's.
   */
  #queueVersion: number | undefined;
  #scheduled = false;
  /**
   * Script calls sent and not yet answered (a batch's until the end of the turn it was answered in): with
   * none, a request leaves at once rather than at the end of the turn.
   */
  #inFlight = 0;

  readonly #landed = (): void => {
    this.#inFlight--;
  };

  readonly #flush = (): void => {
    this.#scheduled = false;
    const batch = this.#queue;
    const version = this.#queueVersion;
    this.#queue = [];
    if (batch.length === 0) return;
    if (!this.#o.mayCall()) {
      for (const asked of batch) this.#listener.unsent(asked);
      return;
    }
    if (!this.#o.connection.isCluster) {
      this.#sendInChunks(batch, version);
      return;
    }
    // In a Cluster one script call can only touch one slot: group by slot; a request whose rules span slots
    // is decided slot by slot (CrossSlotPolicy).
    const bySlot = new Map<number, A[]>();
    for (const asked of batch) {
      let slot: number;
      if (this.#crossSlot === undefined) slot = calculateSlot(this.stateKey(asked.key));
      else {
        let parts: ReturnType<CrossSlotPolicy['partition']>;
        try {
          parts = this.#crossSlot.partition(asked.key);
        } catch (error) {
          // A rule's scope function threw: the developer's error, this request's alone.
          this.#listener.failed(asked, error, this.stateKey(asked.key));
          continue;
        }
        if (parts.length > 1) {
          void this.#decideAcross(this.#crossSlot, asked, parts);
          continue;
        }
        slot = (parts[0] as (typeof parts)[number]).slot;
      }
      const group = bySlot.get(slot);
      if (group === undefined) bySlot.set(slot, [asked]);
      else group.push(asked);
    }
    for (const group of bySlot.values()) this.#sendInChunks(group, version);
  };

  constructor(options: TransportOptions, listener: TransportListener<A>) {
    this.#o = options;
    this.#listener = listener;
    const { rules, connection } = options;
    this.#rulesArg = ruleArgs(rules);
    this.#script = decideScript(rules.map((rule) => rule.kind));
    const only = rules.length === 1 ? (rules[0] as Algorithm) : undefined;
    // On a Cluster a rule counted against another key lives in another slot than the key's ban.
    this.#oneScript =
      only !== undefined && (!connection.isCluster || only.scope === undefined)
        ? decideOneScript(only.kind)
        : undefined;
    this.#tailArgs = options.maxClockSkewMs === undefined ? [] : [numArg(options.maxClockSkewMs)];
    this.#skewArg = options.maxClockSkewMs === undefined ? '' : numArg(options.maxClockSkewMs);
    this.#crossSlot =
      connection.isCluster && rules.some((rule) => rule.scope !== undefined)
        ? new CrossSlotPolicy(
            connection,
            rules,
            options.prefix,
            options.stateName,
            (promise) => withDeadline(promise, options.timeoutMs, 'a cross-slot decision'),
            this.#tailArgs,
          )
        : undefined;
  }

  /**
   * The state key of `key`'s first rule: where a failure about the key is probed (the request key itself when
   * the rule's scope gives no identity for it: that failure is the scope's, and must still reach its caller).
   */
  stateKey(key: string): string {
    const rule = this.#o.rules[0] as Algorithm;
    let identity: string;
    try {
      identity = identityOf(rule, key);
    } catch {
      identity = key;
    }
    return stateKey(this.#o.prefix, identity, this.#o.stateName(rule));
  }

  /**
   * Sends `batch` (asked together, under one configuration version) now, or with the turn's batch while a call
   * is in flight, as `send` does one ask; each answer goes to the listener.
   */
  sendAll(batch: readonly A[]): void {
    if (batch.length === 0) return;
    this.#queueUnder(this.#o.version?.());
    for (const asked of batch) this.#queue.push(asked);
    this.#leave();
  }

  /** Sends `asked` now, or with the turn's batch while a call is in flight; its answer goes to the listener. */
  send(asked: A): void {
    this.#queueUnder(this.#o.version?.());
    this.#queue.push(asked);
    this.#leave();
  }

  /** Makes the queue one of `version`: asked under a newer configuration than the queue, the queue leaves now, under its own. */
  #queueUnder(version: number | undefined): void {
    if (this.#queue.length > 0 && version !== this.#queueVersion) this.#flush();
    if (this.#queue.length === 0) this.#queueVersion = version;
  }

  /** The queue leaves now when no call is out, else at the end of this turn (once). */
  #leave(): void {
    if (this.#scheduled) return;
    if (this.#inFlight === 0) {
      this.#flush();
      return;
    }
    this.#scheduled = true;
    setImmediate(this.#flush);
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
  #sendInChunks(group: A[], version: number | undefined): void {
    const several = group.length > 1 && (group[0] as A).key !== (group[group.length - 1] as A).key;
    const { maxBatch } = this.#o;
    const max = this.#inFlight === 0 && several ? Math.min(maxBatch, Math.ceil(group.length / 2)) : maxBatch;
    if (group.length <= max) {
      void this.#send(group, version);
      return;
    }
    for (let i = 0; i < group.length; i += max) void this.#send(group.slice(i, i + max), version);
  }

  /** The script call that decides `group` (one slot's requests): decide_one.lua for one request when it can. */
  #call(group: A[], version: number | undefined): ScriptCall {
    const { rules, prefix, stateName } = this.#o;
    const first = group[0] as A;
    if (group.length === 1 && this.#oneScript !== undefined) {
      const rule = rules[0] as Algorithm;
      const state = stateKey(prefix, identityOf(rule, first.key), stateName(rule));
      return {
        script: this.#oneScript,
        keys: this.#withVersion([state, banKey(prefix, first.key), this.#marker(state)], state),
        args: [
          ...this.#rulesArg,
          Number.isNaN(first.now) ? '' : numArg(first.now),
          numArg(permitsOfRule(first.permits, rule)),
          numArg(first.maxWaitMs),
          first.peek ? '1' : '0',
          ...this.#tailOf(version),
        ],
      };
    }
    // Every distinct state key once (a global rule's key is shared by every request), and per request key
    // a group: the indices of its rules' state keys and of its ban. KEYS holds the states, then the bans, then
    // the slot's ban marker (decide.lua reads the bans only while the marker says one can be in force).
    // Every key the script touches is one of these: a window algorithm's state is one key too.
    const stateIndex = new Map<string, number>();
    const states: string[] = [];
    const bans: string[] = [];
    const groupIndex = new Map<string, number>();
    const groups: number[][] = [];
    const wire = group.map((asked) => {
      let g = groupIndex.get(asked.key);
      if (g === undefined) {
        const indices = rules.map((rule) => {
          const name = stateKey(prefix, identityOf(rule, asked.key), stateName(rule));
          let k = stateIndex.get(name);
          if (k === undefined) {
            states.push(name);
            k = states.length;
            stateIndex.set(name, k);
          }
          return k;
        });
        bans.push(banKey(prefix, asked.key));
        indices.push(-bans.length);
        groups.push(indices);
        g = groups.length;
        groupIndex.set(asked.key, g);
      }
      const permits = wirePermits(asked.permits, rules);
      return { group: g, now: asked.now, permits, maxWaitMs: asked.maxWaitMs, peek: asked.peek };
    });
    // A ban's index is known once every state is: it follows them.
    for (const indices of groups) indices[indices.length - 1] = states.length - (indices.at(-1) as number);
    const packed = packRequests(wire);
    return {
      script: this.#script,
      keys: this.#withVersion([...states, ...bans, this.#marker(states[0] as string)], states[0] as string),
      args: [
        ...this.#rulesArg,
        packGroups(groups),
        packed.requests,
        ...withPermitRows(this.#tailOf(version), packed.permitRows),
      ],
    };
  }

  /** ARGV after a call's requests: the skew bound, and the configuration version they were asked under when checked. */
  #tailOf(version: number | undefined): readonly string[] {
    return version === undefined ? this.#tailArgs : [this.#skewArg, String(version)];
  }

  /** `keys` with the configuration version key of the slot `aKey` lives in last, when versions are checked. */
  #withVersion(keys: string[], aKey: string): string[] {
    if (this.#o.version === undefined) return keys;
    keys.push(versionKeyBeside(this.#o.prefix, aKey, this.#o.connection.isCluster));
    return keys;
  }

  /** The ban marker of the slot `aKey` lives in (see banMarkerKey). */
  #marker(aKey: string): string {
    return banMarkerKey(this.#o.prefix, this.#o.connection.isCluster ? calculateSlot(aKey) : undefined);
  }

  async #send(group: A[], version: number | undefined): Promise<void> {
    let call: ScriptCall;
    try {
      call = this.#call(group, version);
    } catch (error) {
      // A rule's scope function failed: a developer error, reported to every caller of this batch.
      for (const asked of group) this.#listener.failed(asked, error, this.stateKey(asked.key));
      return;
    }
    const { script, keys, args } = call;
    const sentAtMs = this.#o.localClock.now();
    let reply: Buffer;
    this.#inFlight++;
    const running = this.#o.connection.runScript(script, keys, args);
    try {
      reply = bufferReply(await withDeadline(running, this.#o.timeoutMs, 'a decision'), script.name);
    } catch (error) {
      const newer = this.#listener.stale === undefined ? undefined : versionError(error, 'SLUICE_STALE');
      if (newer !== undefined) {
        // Another node changed the configuration: nothing was decided, and Redis is fine.
        for (const asked of group) this.#listener.stale?.(asked, newer);
        return;
      }
      if (error instanceof DeadlineError) this.#whenLate(running, script.name, group, sentAtMs);
      // Redis answered about one of these keys: the others must not pay for it. Each is tried alone.
      if (isKeyScopedError(error) && group.length > 1) for (const asked of group) void this.#send([asked], version);
      else for (const asked of group) this.#listener.failed(asked, error, keys[0] as string);
      return;
    } finally {
      // A batch's callers ask again in this same turn: they leave together at its end, as one call, rather
      // than the first alone and the rest behind it. A lone caller's next request leaves at once.
      if (group.length > 1) setImmediate(this.#landed);
      else this.#inFlight--;
    }
    const decoded = unpackReplies(reply, group.length, this.#o.rules, (q) => group[q] as A);
    for (let q = 0; q < group.length; q++) {
      const { decision, decidedAtMs, verdicts, ban } = decoded[q] as (typeof decoded)[number];
      this.#listener.answered(group[q] as A, {
        decision,
        decidedAtMs,
        ruleDecidedAtMs: undefined,
        banRestMs: ban?.restMs,
        banRule: ban?.rule,
        sentAtMs,
        verdicts,
        ban,
      });
    }
  }

  /**
   * Resolves once every call that missed its deadline was answered or failed, or after `maxMs` (a call on a
   * dropped connection may never settle).
   */
  async lateCallsSettled(maxMs: number): Promise<void> {
    if (this.#lateCalls.size === 0) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const bound = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, maxMs);
      timer.unref?.();
    });
    await Promise.race([Promise.allSettled([...this.#lateCalls]), bound]);
    clearTimeout(timer);
  }

  /** A call past its deadline may still be answered: its answers go to the listener's `late`. */
  #whenLate(running: Promise<ScriptReply>, scriptName: string, group: A[], sentAtMs: number): void {
    const late = this.#listener.late;
    if (late === undefined) return;
    this.#lateCalls.add(running);
    void running.then(
      () => this.#lateCalls.delete(running),
      () => this.#lateCalls.delete(running),
    );
    running.then(
      (answer) => {
        let decoded: ReturnType<typeof unpackReplies>;
        try {
          decoded = unpackReplies(bufferReply(answer, scriptName), group.length, this.#o.rules, (q) => group[q] as A);
        } catch {
          return; // a reply it cannot read says nothing of what Redis counted
        }
        for (const [q, { decision, decidedAtMs, verdicts, ban }] of decoded.entries())
          late.call(this.#listener, group[q] as A, {
            decision,
            decidedAtMs,
            ruleDecidedAtMs: undefined,
            banRestMs: ban?.restMs,
            banRule: ban?.rule,
            sentAtMs,
            verdicts,
            ban,
          });
      },
      () => undefined,
    );
  }

  async #decideAcross(
    policy: CrossSlotPolicy,
    asked: A,
    parts: ReturnType<CrossSlotPolicy['partition']>,
  ): Promise<void> {
    const sentAtMs = this.#o.localClock.now();
    try {
      const { decision, ruleDecidedAtMs, verdicts, ban } = await policy.decide(asked, parts);
      // Each slot decided at its own time: the grant stands from the last of them.
      this.#listener.answered(asked, {
        decision,
        decidedAtMs: Math.max(...ruleDecidedAtMs),
        ruleDecidedAtMs,
        banRestMs: undefined,
        banRule: ban?.rule,
        sentAtMs,
        verdicts,
        ban,
      });
    } catch (error) {
      this.#listener.failed(asked, error, this.stateKey(asked.key));
    }
  }
}
