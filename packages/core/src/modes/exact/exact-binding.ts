import type { EngineDecision, EngineRules } from '../../contract/engine.js';
import { isStale } from '../../contract/engine.js';
import { EXPLICIT_BAN } from '../../engine/ban.js';
import type { DecisionNote } from '../../engine/observe.js';
import { type GrantSource, type Permits, lessPermits, mostPermits } from '../../engine/store.js';
import type { Decision } from '../../foundation/decision.js';
import { SluiceRangeError, SluiceTypeError } from '../../foundation/errors.js';
import { afterIo } from '../deadline.js';
import { TurnDeadlines } from '../turn-deadline.js';
import type { DenyCache } from '../deny-cache.js';
import type { VersionBinding } from '../live/live-binding.js';
import type { DecisionEvent } from '../store-events.js';
import { ExactControls } from './exact-controls.js';
import { type DenialSharing, type EngineSource, type ExactParts, engineKind } from './exact-parts.js';

/**
 * How long, in decision deadlines, a recovered store waits for calls still out past their deadline before it
 * charges the engine with the fail mode's grants (what a late answer granted on the engine is not charged again).
 */
const LATE_CALLS_WAIT = 20;

/** One asked decision, and the caller waiting for it. */
class PendingDecision {
  constructor(
    readonly key: string,
    readonly permits: Permits,
    readonly maxWaitMs: number,
    readonly peek: boolean,
    readonly note: DecisionNote | undefined,
    readonly resolve: (decision: Decision) => void,
    /** The caller's own error (its input refused: a rule's scope that gave no identity for the key). */
    readonly reject: (error: unknown) => void,
  ) {}

  /** The fail mode granted it (the engine missed the deadline); a late grant on the engine makes it counted twice. */
  grantedByFallback = false;
  /** The configuration version it was asked under: a denial it brings back is cached under that one only. */
  version = 1;
  /** Who set the key's ban, when the engine answered it blocked (EXPLICIT_BAN: `block`). */
  banRule: number | undefined;
  /** The engine call deciding it (awaited by settleFallback while it is past its deadline). */
  call: Promise<unknown> = NO_CALL;
  /** The turn whose deadline it is waited for under (see TurnDeadlines). */
  deadlineTurn: unknown = undefined;
}

const NO_CALL: Promise<unknown> = Promise.resolve();

/**
 * Exact mode for one limiter over any engine, assembled from its parts: the deny cache answers a denial that
 * cannot change yet; the health gate sends the rest to the engine (`decide`, one ask per call: an engine
 * carries the asks of one turn together, as Redis does in one script call per slot) while it answers, and to
 * the fail mode while it does not (or when a call fails or misses its deadline); each decision is marked with
 * where it was made (`note.source`, `onDecision`, and `source: 'fallback'` on the Decision), so a refund
 * finds its way back. Controls go through ExactControls (`adjust`).
 * @example
 * const binding = new ExactBinding(parts) // parts: see ExactParts; a store builds them
 * const decision = await binding.consume('user:1', 1, 0)
 */
export class ExactBinding implements VersionBinding {
  readonly #parts: ExactParts;
  readonly #controls: ExactControls;
  /** The fail mode's charges being settled (see settleFallback): a late grant comes off them. */
  #settling: Map<string, Permits> | undefined;
  readonly #denials: DenialSharing | undefined;
  /** This binding's own, for a single rule whose single-permit denials hold until retryAfterMs. */
  readonly #cache: DenyCache | undefined;
  /** The rules as the engine is asked them, under the version they were made for (one object per version). */
  #engineRules: EngineRules;
  /** Calls that missed their deadline and may still be answered (see settleFallback). */
  readonly #lateCalls = new Set<Promise<unknown>>();
  /** One deadline per turn's calls; a call still out at its deadline fails (the fail mode decides it). */
  readonly #deadlines: TurnDeadlines<PendingDecision>;
  /** Pending while this turn's deferred decisions wait for the I/O already delivered (see #afterIo). */
  #readingIo: Promise<void> | undefined;
  /** What the engine's own decisions are marked with. */
  readonly #source: EngineSource;
  #bound = true;

  constructor(parts: ExactParts) {
    this.#parts = parts;
    this.#source = engineKind(parts.engine).source;
    this.#engineRules = this.#rulesAt(parts.version?.());
    const only = parts.rules.length === 1 ? parts.rules[0] : undefined;
    this.#denials = parts.denials;
    this.#cache = only?.stableDenials === true ? parts.denials?.cache : undefined;
    this.#controls = new ExactControls(parts, () => this.#rulesNow());
    this.#deadlines = new TurnDeadlines(parts.timeoutMs, 'a decision', (p, error) => {
      this.#lateCalls.add(p.call);
      this.#failed(p, error);
    });
  }

  #rulesAt(version: number | undefined): EngineRules {
    const { prefix, rules, stateName } = this.#parts;
    const states = rules.map((rule) => stateName(rule));
    return version === undefined ? { prefix, rules, states } : { prefix, rules, states, version };
  }

  /** The rules under the version in force (the same object while it stays: an engine may keep what it derived). */
  #rulesNow(): EngineRules {
    const version = this.#parts.version?.();
    if (version !== this.#engineRules.version) this.#engineRules = this.#rulesAt(version);
    return this.#engineRules;
  }

  consume(key: string, permits: Permits, maxWaitMs: number, note?: DecisionNote): Decision | Promise<Decision> {
    if (this.#readingIo === undefined && !(permits === 1 && maxWaitMs === 0 && this.#cache?.has(key) === true))
      return this.#consumeNow(key, permits, maxWaitMs, note);
    // A cached denial stands in for the engine's answer, which could not come back before this process read
    // what had already reached it. A change announced on another node (a raised limit, a reset, a refund) is
    // such a message: a caller awaiting cached answers in a loop would otherwise run on microtasks alone and
    // never let it in. So the cache is consulted once the I/O already delivered is read.
    return this.#afterIo().then(() => this.#consumeNow(key, permits, maxWaitMs, note));
  }

  /**
   * Resolves once the I/O that has reached this process is read (the check phase after the current poll),
   * one promise for every call of the same turn. While it is pending, every call of this binding waits for
   * it too, so calls reach the engine in the order they were asked.
   */
  #afterIo(): Promise<void> {
    this.#readingIo ??= new Promise((resolve) =>
      afterIo(() => {
        this.#readingIo = undefined;
        resolve();
      }),
    );
    return this.#readingIo;
  }

  #consumeNow(key: string, permits: Permits, maxWaitMs: number, note?: DecisionNote): Decision | Promise<Decision> {
    if (this.#cache !== undefined && permits === 1 && maxWaitMs === 0) {
      const now = this.#parts.localClock.now();
      const cached = this.#cache.get(key, now, this.#version());
      if (cached !== undefined) return this.#told(key, cached, note, 'deny_cache', now);
    }
    // A request on its way to the engine may change the key (a grant, a reservation): until its answer is
    // back, no cached denial for the key may be trusted, here or under the limiter's other plans.
    this.#denials?.forgetHere(key);
    if (!this.#parts.health.healthy) return this.#byFallback(key, permits, maxWaitMs, false, note);
    return this.#ask(key, permits, maxWaitMs, false, note);
  }

  peek(key: string): Decision | Promise<Decision> {
    if (this.#readingIo !== undefined) return this.#readingIo.then(() => this.peek(key));
    if (!this.#parts.health.healthy) return this.#byFallback(key, 1, 0, true, undefined);
    return this.#ask(key, 1, 0, true, undefined);
  }

  /**
   * The key's standing while the engine holds an explicit `block()` ban on it (read as a peek: nothing
   * consumed), asked only while the store's ban hint says one can be in force. While the engine is away,
   * none: the fail mode knows a ban's end, not who set it, and an allowed key is not held up.
   */
  explicitBan(key: string): Decision | undefined | Promise<Decision | undefined> {
    if (this.#readingIo !== undefined) return this.#readingIo.then(() => this.explicitBan(key));
    if (!this.#parts.health.healthy) return undefined;
    const may = this.#parts.banHint?.mayHold(key) ?? true;
    if (may === false) return undefined;
    return may === true ? this.#explicitStanding(key) : may.then((m) => (m ? this.#explicitStanding(key) : undefined));
  }

  #explicitStanding(key: string): Promise<Decision | undefined> {
    return new Promise<Decision | undefined>((resolve, reject) => {
      const pending: PendingDecision = new PendingDecision(
        key,
        1,
        0,
        true,
        undefined,
        (decision) => resolve(pending.banRule === EXPLICIT_BAN ? decision : undefined),
        reject,
      );
      this.#send(pending);
    });
  }

  #ask(
    key: string,
    permits: Permits,
    maxWaitMs: number,
    peek: boolean,
    note: DecisionNote | undefined,
  ): Promise<Decision> {
    return new Promise<Decision>((resolve, reject) =>
      this.#send(new PendingDecision(key, permits, maxWaitMs, peek, note, resolve, reject)),
    );
  }

  /** Asks the engine to decide `p` under the version in force, within timeoutMs. */
  #send(p: PendingDecision): void {
    const rules = this.#rulesNow();
    p.version = rules.version ?? 1;
    const { key, permits, maxWaitMs, peek } = p;
    const sentAtMs = this.#parts.localClock.now();
    let call: Promise<readonly unknown[]>;
    try {
      call = this.#parts.engine.decide(rules, [
        { key, permits, maxWaitMs, peek, at: this.#parts.decisionClock?.now() },
      ]);
    } catch (error) {
      // An engine never throws; a rule's scope function may have, through one that computes identities here.
      this.#failed(p, error);
      return;
    }
    p.call = call;
    this.#deadlines.start(p);
    call.then(
      (answers) => {
        if (!this.#deadlines.answered(p)) {
          this.#answeredLate(p, answers);
          return;
        }
        const answer = Array.isArray(answers) ? (answers[0] as unknown) : undefined;
        if (typeof answer !== 'object' || answer === null) {
          // An engine of your own that answers no decision: the fail mode decides, never a caller left waiting.
          this.#failed(p, new Error(`${this.#parts.engine.name}: decide answered no decision for an ask`));
          return;
        }
        try {
          if (isStale(answer)) this.#stale(p, answer.stale);
          else this.#answered(p, answer as EngineDecision, sentAtMs);
        } catch (error) {
          this.#failed(p, error);
        }
      },
      (error: unknown) => {
        if (this.#deadlines.answered(p)) this.#failed(p, error);
        else this.#lateCalls.delete(call);
      },
    );
  }

  /** A call past its deadline (the fail mode decided it) answered after all: a grant it carries was counted by the engine. */
  #answeredLate(p: PendingDecision, answers: readonly unknown[]): void {
    this.#lateCalls.delete(p.call);
    const answer = (Array.isArray(answers) ? answers[0] : undefined) as EngineDecision | { stale: number } | undefined;
    // What the engine counted the fail mode granted meanwhile: charging it again on recovery would count it twice.
    if (typeof answer !== 'object' || answer === null || isStale(answer) || answer.decision?.allowed !== true) return;
    if (!p.grantedByFallback || p.peek) return;
    const settling = this.#settling?.get(p.key);
    if (settling === undefined) this.#parts.fallback.dropCharge(p.key, p.permits);
    else this.#settling?.set(p.key, lessPermits(settling, p.permits, this.#parts.rules));
  }

  /** Where a failure about `key` is probed; the key itself when the store's probe key cannot be made for it. */
  #probeKey(key: string): string {
    try {
      return this.#parts.probeKey(key);
    } catch {
      return key;
    }
  }

  /** The configuration version this binding decides under now (1: versions are not checked). */
  #version(): number {
    return this.#parts.version?.() ?? 1;
  }

  #answered(p: PendingDecision, answer: EngineDecision, sentAtMs: number): void {
    this.#parts.health.reportSuccess();
    const { decision, ban } = answer;
    p.banRule = ban?.rule;
    const banRestMs = ban?.restMs;
    // The fail mode learns of bans, so a key banned on the engine stays banned through an outage.
    if (banRestMs !== undefined && !p.peek) {
      this.#parts.fallback.learnBan(p.key, banRestMs);
      // Another plan's binding may hold an older denial of the key that does not know of the ban.
      this.#denials?.forgetHere(p.key);
    }
    if (!p.peek) this.#parts.fallback.remember(p.key, decision);
    const cache = this.#cache;
    if (cache !== undefined && !p.peek) {
      if (p.permits === 1 && p.maxWaitMs === 0) cache.record(p.key, decision, sentAtMs, p.version, banRestMs);
      else if (decision.allowed) cache.delete(p.key);
    }
    p.resolve(this.#told(p.key, decision, p.note, this.#source, answer.decidedAtMs, answer.ruleDecidedAtMs));
  }

  #failed(p: PendingDecision, error: unknown): void {
    // A refusal of the call's input (a rule's scope that gave no identity for the key) is the caller's error,
    // as on the memory store: no outage of the engine, and nothing the fail mode could decide either.
    if (error instanceof SluiceTypeError || error instanceof SluiceRangeError) {
      p.reject(error);
      return;
    }
    this.#parts.health.reportFailure(error, this.#probeKey(p.key));
    let decision: Decision;
    try {
      decision = this.#byFallback(p.key, p.permits, p.maxWaitMs, p.peek, p.note);
    } catch (refused) {
      p.reject(refused);
      return;
    }
    p.grantedByFallback = decision.allowed;
    p.resolve(decision);
  }

  /** Asks again under the configuration in force (see ExactParts.onStale), or of the fail mode when it cannot be read. */
  #stale(p: PendingDecision, version: number): void {
    const byFallback = () => {
      try {
        p.resolve(this.#byFallback(p.key, p.permits, p.maxWaitMs, p.peek, p.note));
      } catch (refused) {
        p.reject(refused);
      }
    };
    const next = this.#parts.onStale;
    if (next === undefined) {
      byFallback();
      return;
    }
    next(version).then((binding) => {
      if (binding === undefined) return byFallback();
      try {
        const decided = p.peek ? binding.peek(p.key) : binding.consume(p.key, p.permits, p.maxWaitMs, p.note);
        return Promise.resolve(decided).then(p.resolve, byFallback);
      } catch {
        return byFallback();
      }
    }, byFallback);
  }

  /** The fail mode's decision (marked `source: 'fallback'`, so the caller knows the fleet's count was not consulted). */
  #byFallback(
    key: string,
    permits: Permits,
    maxWaitMs: number,
    peek: boolean,
    note: DecisionNote | undefined,
  ): Decision {
    const decision = this.#parts.fallback.decide(key, permits, maxWaitMs, peek);
    return this.#told(key, decision, note, 'fallback', this.#parts.localClock.now());
  }

  /** Tells whoever observes where `decision` came from, and returns it. */
  #told(
    key: string,
    decision: Decision,
    note: DecisionNote | undefined,
    source: DecisionEvent['source'],
    decidedAtMs: number,
    ruleDecidedAtMs?: readonly number[] | undefined,
  ): Decision {
    if (note !== undefined) note.source = source;
    const version = this.#version();
    if (version > 1) decision = { ...decision, configVersion: version };
    if (this.#parts.override === true) decision = { ...decision, override: true };
    const onDecision = this.#parts.onDecision;
    if (onDecision !== undefined) {
      const { prefix } = this.#parts;
      onDecision(
        ruleDecidedAtMs === undefined
          ? { prefix, key, decision, source, decidedAtMs }
          : { prefix, key, decision, source, decidedAtMs, ruleDecidedAtMs },
      );
    }
    return decision;
  }

  /** Forgets the key on the engine, in the fail mode and in every node's deny cache (see ExactControls.reset). */
  reset(key: string): Promise<void> {
    if (this.#readingIo !== undefined) return this.#readingIo.then(() => this.reset(key));
    this.#denials?.forgetHere(key);
    return this.#controls.reset(key);
  }

  /** Gives back where the grant was counted (see ExactControls.refund). */
  async refund(key: string, permits: Permits, grantedMsAgo: number, grant?: GrantSource): Promise<void> {
    if (this.#readingIo !== undefined) await this.#readingIo;
    // A denial cached here may have become a grant.
    this.#denials?.forgetHere(key);
    return this.#controls.refund(key, permits, grantedMsAgo, grant);
  }

  async penalize(key: string, permits: Permits): Promise<void> {
    if (this.#readingIo !== undefined) await this.#readingIo;
    // A denial cached here would now be told too short a wait.
    this.#denials?.forgetHere(key);
    return this.#controls.penalize(key, permits);
  }

  block(key: string, ms: number): Promise<void> {
    if (this.#readingIo !== undefined) return this.#readingIo.then(() => this.block(key, ms));
    this.#denials?.forgetHere(key);
    this.#parts.banHint?.raised(key);
    return this.#controls.block(key, ms);
  }

  unblock(key: string): Promise<void> {
    if (this.#readingIo !== undefined) return this.#readingIo.then(() => this.unblock(key));
    this.#denials?.forgetHere(key);
    return this.#controls.unblock(key);
  }

  /** Charges the engine, answering again, with what the fail mode granted while it was away (see ExactControls.settleFallback). */
  async settleFallback(): Promise<{ keys: number; permits: number; kept: number }> {
    // Taken as the fail mode's state stands when the engine came back, before the fleet's count moves its share.
    const charges = new Map(this.#parts.fallback.takeCharges());
    this.#settling = charges;
    try {
      // Calls still out past their deadline may yet be answered: a grant they carry is the engine's, not a charge.
      await this.#lateCallsSettled(this.#parts.timeoutMs * LATE_CALLS_WAIT);
    } finally {
      if (this.#settling === charges) this.#settling = undefined;
    }
    return this.#controls.settleFallback([...charges].filter(([, permits]) => mostPermits(permits) > 0));
  }

  /** Resolves once every call past its deadline was answered or failed, or after `maxMs` (one may never settle). */
  async #lateCallsSettled(maxMs: number): Promise<void> {
    if (this.#lateCalls.size === 0) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const bound = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, maxMs);
      (timer as { unref?: () => void }).unref?.();
    });
    await Promise.race([Promise.allSettled([...this.#lateCalls]), bound]);
    clearTimeout(timer);
  }

  /** Drops every denial this binding cached (the limiter's configuration changed). */
  forgetAll(): void {
    this.#cache?.clear();
  }

  /** Drops the key from this binding's deny cache (a reset here or, through a message, on another node). */
  forget(key: string): void {
    this.#cache?.delete(key);
  }

  unbind(): void {
    if (!this.#bound) return;
    this.#bound = false;
    this.#parts.fallback.unbind();
    this.#parts.unbind();
  }
}
