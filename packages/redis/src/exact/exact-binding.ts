import type { Clock, Decision, Permits } from '@sluice/core';
import {
  type BoundStore,
  type GrantSource,
  type DecisionEvent,
  type DecisionNote,
  type DenyCache,
  EXPLICIT_BAN,
  type EngineHealth,
  type FallbackBinding,
  lessPermits,
  mostPermits,
} from '@sluice/core/internal';
import { BanMarkers } from './ban-markers.js';
import { RedisControls } from './controls.js';
import {
  type Answer,
  type Asked,
  DecisionTransport,
  type TransportListener,
  type TransportOptions,
} from './transport.js';

/**
 * The deny caches of a limiter's prefix: this binding's own (used for a single rule whose denials hold, see
 * Algorithm.stableDenials), and how a key's cached denials are dropped here under every plan of the limiter
 * (`forgetHere`) and, on a reset, unblock or refund, on every node (`publishReset`).
 */
export interface DenialSharing {
  /** This binding's own cache (used only where a denial holds: a single rule with stable denials). */
  readonly cache: DenyCache;
  /** Drops `key` from the deny cache of every binding of the limiter's prefix in this process. */
  readonly forgetHere: (key: string) => void;
  /** Tells every node (pub/sub) to drop `key` from its deny caches: after a reset, an unblock or a refund. */
  readonly publishReset: (key: string) => Promise<unknown>;
}

/** The parts a store assembles into one limiter's exact decisions on Redis. */
export interface ExactParts {
  /** Where decisions travel (no policy: see DecisionTransport); the gate is the health machine. */
  readonly transport: Omit<TransportOptions, 'mayCall'>;
  /** The client clock, or undefined for Redis TIME. */
  readonly decisionClock: Clock | undefined;
  /** The store's health machine: decisions skip Redis while it fails, and every call reports to it. */
  readonly health: EngineHealth;
  /** What decides while Redis is away (one per limiter, shared with whatever else decides its keys). */
  readonly fallback: FallbackBinding;
  /** Undefined: no deny cache (the store's `denyCache: false`, or a mode that keeps none). */
  readonly denials: DenialSharing | undefined;
  /**
   * Tells every node a refund may have freed `key` (sent only when the key was denying one permit before it),
   * for a mode that keeps no deny cache but denies from state of its own (leased mode's spent leases).
   * Undefined: `denials.publishReset` does.
   */
  readonly publishRefund?: ((key: string) => Promise<unknown>) | undefined;
  /** Already isolated: a throwing callback is reported, never thrown here. */
  readonly onDecision: ((event: DecisionEvent) => void) | undefined;
  /** Releases what the store holds for this binding. */
  readonly unbind: () => void;
  /**
   * Live limits: a slot answered that the limiter's configuration is newer (`version`) than this binding's.
   * Resolves to the binding that decides under it, or undefined when it cannot be read (the fail mode
   * decides). Undefined: versions are not checked.
   */
  readonly onStale?: ((version: number) => Promise<BoundStore | undefined>) | undefined;
  /** True for the binding of one key's own rules (limiter.override): its decisions say so. */
  readonly override?: boolean | undefined;
}

/** One asked decision: what the transport sends, and the caller waiting for it. */
/**
 * How long, in decision deadlines, a recovered store waits for calls still out past their deadline before it
 * charges Redis with the fail mode's grants (what a late answer granted on Redis is not charged again).
 */
const LATE_CALLS_WAIT = 20;

class PendingDecision implements Asked {
  constructor(
    readonly key: string,
    readonly permits: Permits,
    readonly maxWaitMs: number,
    readonly now: number,
    readonly peek: boolean,
    readonly note: DecisionNote | undefined,
    readonly resolve: (decision: Decision) => void,
  ) {}

  /** The fail mode granted it (Redis missed the deadline); a late grant on Redis makes it counted twice. */
  grantedByFallback = false;
  /** The configuration version it was asked under: a denial it brings back is cached under that one only. */
  version = 1;
  /** Who set the key's ban, when Redis answered it blocked (see Answer.banRule). */
  banRule: number | undefined;
}

/**
 * Exact mode for one limiter, assembled from its parts: the deny cache answers a denial that cannot change
 * yet; the health gate sends the rest to Redis through the transport while Redis answers, and to the fail
 * mode while it does not (or when a call fails or misses its deadline); each decision is marked with where it
 * was made (`note.source`, `onDecision`, and `source: 'fallback'` on the Decision), so a refund finds its way
 * back. Controls go through RedisControls.
 * @example
 * const binding = new ExactBinding(parts) // parts: see ExactParts; a store builds them
 * const decision = await binding.consume('user:1', 1, 0)
 */
export class ExactBinding implements BoundStore {
  readonly #parts: ExactParts;
  readonly #transport: DecisionTransport<PendingDecision>;
  readonly #controls: RedisControls;
  /** Whether a key's ban can be in force (its slot's marker): an allowed key asks Redis only then. */
  readonly #banMarkers: BanMarkers;
  /** The fail mode's charges being settled (see settleFallback): a late grant comes off them. */
  #settling: Map<string, Permits> | undefined;
  /** The store's deny caches of this prefix. */
  readonly #denials: DenialSharing | undefined;
  /** This binding's own, for a single rule whose single-permit denials hold until retryAfterMs. */
  readonly #cache: DenyCache | undefined;
  readonly #prefix: string;
  /** Pending while this turn's deferred decisions wait for the I/O already delivered (see #afterIo). */
  #readingIo: Promise<void> | undefined;
  #bound = true;

  constructor(parts: ExactParts) {
    this.#parts = parts;
    const { transport, health } = parts;
    this.#prefix = transport.prefix;
    // The transport's answers come back to this binding's private handlers.
    const listener: TransportListener<PendingDecision> = {
      answered: (p, answer) => this.#answered(p, answer),
      failed: (p, error, stateKey) => this.#failed(p, error, stateKey),
      unsent: (p) => this.#unsent(p),
      late: (p, answer) => {
        // Redis counted the grant the fail mode made meanwhile: charging it again on recovery would count it twice.
        if (!p.grantedByFallback || !answer.decision.allowed || p.peek) return;
        const settling = this.#settling?.get(p.key);
        if (settling === undefined) this.#parts.fallback.dropCharge(p.key, p.permits);
        else this.#settling?.set(p.key, lessPermits(settling, p.permits, this.#parts.transport.rules));
      },
      stale: (p, version) => this.#stale(p, version),
    };
    this.#transport = new DecisionTransport({ ...transport, mayCall: () => health.healthy }, listener);
    const only = transport.rules.length === 1 ? transport.rules[0] : undefined;
    this.#denials = parts.denials;
    this.#cache = only?.stableDenials === true ? parts.denials?.cache : undefined;
    this.#controls = new RedisControls({
      connection: transport.connection,
      rules: transport.rules,
      prefix: transport.prefix,
      stateName: transport.stateName,
      decisionClock: parts.decisionClock,
      timeoutMs: transport.timeoutMs,
      health,
      fallback: parts.fallback,
      publishReset: parts.denials?.publishReset,
      publishRefund: parts.publishRefund,
      version: transport.version,
    });
    this.#banMarkers = new BanMarkers(
      transport.connection,
      transport.prefix,
      transport.timeoutMs,
      transport.localClock,
    );
  }

  consume(key: string, permits: Permits, maxWaitMs: number, note?: DecisionNote): Decision | Promise<Decision> {
    if (this.#readingIo === undefined && !(permits === 1 && maxWaitMs === 0 && this.#cache?.has(key) === true))
      return this.#consumeNow(key, permits, maxWaitMs, note);
    // A cached denial stands in for Redis's answer, which could not come back before this process read what had
    // already reached it. A change announced on another node (a raised limit, a reset, a refund) is such a
    // message: a caller awaiting cached answers in a loop would otherwise run on microtasks alone and never let
    // it in. So the cache is consulted once the I/O already delivered is read.
    return this.#afterIo().then(() => this.#consumeNow(key, permits, maxWaitMs, note));
  }

  /**
   * Resolves once the I/O that has reached this process is read (the check phase after the current poll),
   * one promise for every call of the same turn. While it is pending, every call of this binding waits for
   * it too, so calls reach Redis in the order they were asked (a peek asked after a deferred decision is not
   * answered before it).
   */
  #afterIo(): Promise<void> {
    this.#readingIo ??= new Promise((resolve) =>
      setImmediate(() => {
        this.#readingIo = undefined;
        resolve();
      }),
    );
    return this.#readingIo;
  }

  #consumeNow(key: string, permits: Permits, maxWaitMs: number, note?: DecisionNote): Decision | Promise<Decision> {
    if (this.#cache !== undefined && permits === 1 && maxWaitMs === 0) {
      const now = this.#parts.transport.localClock.now();
      const cached = this.#cache.get(key, now, this.#version());
      if (cached !== undefined) return this.#told(key, cached, note, 'deny_cache', now, undefined);
    }
    // A request on its way to Redis may change the key (a grant, a reservation): until its answer is back,
    // no cached denial for the key may be trusted, here or under the limiter's other plans.
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
   * The key's standing while Redis holds an explicit `block()` ban on it (read as a peek: nothing consumed),
   * asked only while the slot's ban marker says a ban can be in force (see BanMarkers: a ban another node sets
   * is seen within BAN_MARKER_TRUST_MS). While Redis is away, none: the fail mode knows a ban's end, not who
   * set it, and an allowed key is not held up.
   */
  explicitBan(key: string): Decision | undefined | Promise<Decision | undefined> {
    if (this.#readingIo !== undefined) return this.#readingIo.then(() => this.explicitBan(key));
    if (!this.#parts.health.healthy) return undefined;
    const may = this.#banMarkers.mayHold(key);
    if (may === false) return undefined;
    return may === true ? this.#explicitStanding(key) : may.then((m) => (m ? this.#explicitStanding(key) : undefined));
  }

  #explicitStanding(key: string): Promise<Decision | undefined> {
    const clock = this.#parts.decisionClock;
    const now = clock === undefined ? Number.NaN : clock.now();
    return new Promise<Decision | undefined>((resolve) => {
      const pending: PendingDecision = new PendingDecision(key, 1, 0, now, true, undefined, (decision) =>
        resolve(pending.banRule === EXPLICIT_BAN ? decision : undefined),
      );
      pending.version = this.#version();
      this.#transport.send(pending);
    });
  }

  #ask(
    key: string,
    permits: Permits,
    maxWaitMs: number,
    peek: boolean,
    note: DecisionNote | undefined,
  ): Promise<Decision> {
    const clock = this.#parts.decisionClock;
    const now = clock === undefined ? Number.NaN : clock.now();
    return new Promise<Decision>((resolve) => {
      const pending = new PendingDecision(key, permits, maxWaitMs, now, peek, note, resolve);
      pending.version = this.#version();
      this.#transport.send(pending);
    });
  }

  /** The configuration version this binding decides under now (1: versions are not checked). */
  #version(): number {
    return this.#parts.transport.version?.() ?? 1;
  }

  #answered(p: PendingDecision, answer: Answer): void {
    this.#parts.health.reportSuccess();
    const { decision, banRestMs } = answer;
    p.banRule = answer.banRule;
    // The fail mode learns of bans, so a key banned on Redis stays banned through an outage.
    if (banRestMs !== undefined && !p.peek) {
      this.#parts.fallback.learnBan(p.key, banRestMs);
      // Another plan's binding may hold an older denial of the key that does not know of the ban.
      this.#denials?.forgetHere(p.key);
    }
    if (!p.peek) this.#parts.fallback.remember(p.key, decision);
    const cache = this.#cache;
    if (cache !== undefined && !p.peek) {
      if (p.permits === 1 && p.maxWaitMs === 0) cache.record(p.key, decision, answer.sentAtMs, p.version, banRestMs);
      else if (decision.allowed) cache.delete(p.key);
    }
    p.resolve(this.#told(p.key, decision, p.note, 'redis', answer.decidedAtMs, answer.ruleDecidedAtMs));
  }

  #failed(p: PendingDecision, error: unknown, stateKey: string): void {
    // An error about this key alone leaves the store healthy (see EngineHealth.reportFailure).
    this.#parts.health.reportFailure(error, stateKey);
    const decision = this.#byFallback(p.key, p.permits, p.maxWaitMs, p.peek, p.note);
    p.grantedByFallback = decision.allowed;
    p.resolve(decision);
  }

  /** Asks again under the configuration in force (see ExactParts.onStale), or of the fail mode when it cannot be read. */
  #stale(p: PendingDecision, version: number): void {
    const byFallback = () => p.resolve(this.#byFallback(p.key, p.permits, p.maxWaitMs, p.peek, p.note));
    const next = this.#parts.onStale;
    if (next === undefined) {
      byFallback();
      return;
    }
    next(version).then((binding) => {
      if (binding === undefined) return byFallback();
      const decided = p.peek ? binding.peek(p.key) : binding.consume(p.key, p.permits, p.maxWaitMs, p.note);
      return Promise.resolve(decided).then(p.resolve, byFallback);
    }, byFallback);
  }

  #unsent(p: PendingDecision): void {
    p.resolve(this.#byFallback(p.key, p.permits, p.maxWaitMs, p.peek, p.note));
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
    return this.#told(key, decision, note, 'fallback', this.#parts.transport.localClock.now(), undefined);
  }

  /** Tells whoever observes where `decision` came from, and returns it. */
  #told(
    key: string,
    decision: Decision,
    note: DecisionNote | undefined,
    source: DecisionEvent['source'],
    decidedAtMs: number,
    ruleDecidedAtMs: readonly number[] | undefined,
  ): Decision {
    if (note !== undefined) note.source = source;
    const version = this.#version();
    if (version > 1) decision = { ...decision, configVersion: version };
    if (this.#parts.override === true) decision = { ...decision, override: true };
    const onDecision = this.#parts.onDecision;
    if (onDecision !== undefined) {
      onDecision(
        ruleDecidedAtMs === undefined
          ? { prefix: this.#prefix, key, decision, source, decidedAtMs }
          : { prefix: this.#prefix, key, decision, source, decidedAtMs, ruleDecidedAtMs },
      );
    }
    return decision;
  }

  /** Forgets the key on Redis, in the fail mode and in every node's deny cache (see RedisControls.reset). */
  reset(key: string): Promise<void> {
    if (this.#readingIo !== undefined) return this.#readingIo.then(() => this.reset(key));
    this.#denials?.forgetHere(key);
    return this.#controls.reset(key);
  }

  /** Gives back where the grant was counted (see RedisControls.refund). */
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
    this.#banMarkers.raised(key);
    return this.#controls.block(key, ms);
  }

  unblock(key: string): Promise<void> {
    if (this.#readingIo !== undefined) return this.#readingIo.then(() => this.unblock(key));
    this.#denials?.forgetHere(key);
    return this.#controls.unblock(key);
  }

  /** Charges Redis, now answering again, with what the fail mode granted while it was away (see RedisControls.settleFallback). */
  async settleFallback(): Promise<{ keys: number; permits: number; kept: number }> {
    // Taken as the fail mode's state stands when Redis came back, before the fleet's count moves its share.
    const charges = new Map(this.#parts.fallback.takeCharges());
    this.#settling = charges;
    try {
      // Calls still out past their deadline may yet be answered: a grant they carry is Redis's, not a charge.
      await this.#transport.lateCallsSettled(this.#parts.transport.timeoutMs * LATE_CALLS_WAIT);
    } finally {
      if (this.#settling === charges) this.#settling = undefined;
    }
    return this.#controls.settleFallback([...charges].filter(([, permits]) => mostPermits(permits) > 0));
  }

  /** Drops every denial this binding cached (the limiter's configuration changed). */
  forgetAll(): void {
    this.#cache?.clear();
  }

  /** Drops the key from this binding's deny cache (a reset here or, through pub/sub, on another node). */
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
