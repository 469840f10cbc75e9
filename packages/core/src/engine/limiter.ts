import type { Algorithm } from '../algorithms/algorithm.js';
import { type Clock, timerSleep } from '../foundation/clock.js';
import { type Decision, FALLBACK_RETRY_MS, neverWhileAway } from '../foundation/decision.js';
import { SluiceError, callerNamed, inCall } from '../foundation/errors.js';
import { type Binding, LiveConfiguration, rulesOf } from './live-configuration.js';
import { AccessListGate } from './access-list-gate.js';
import { LimitedKeysReport } from './limited-keys-report.js';
import { limiterSetup } from './limiter-setup.js';
import type { Rules } from './policy.js';
import { type DecisionNote, observed, recordDecision, registerStatus } from './observe.js';
import { knownOptions } from '../foundation/options.js';
import type { LimiterOptions } from './limiter-options.js';
import {
  ACQUIRE_OPTIONS,
  type AcquireOptions,
  type Limiter,
  type OverridesOptions,
  type OverridesPage,
  PEEK_OPTIONS,
  PENALIZE_OPTIONS,
  type PeekOptions,
  type PenalizeOptions,
  REFUND_OPTIONS,
  type ReconfigureOptions,
  type RefundOptions,
  TRY_ACQUIRE_OPTIONS,
  type TryAcquireOptions,
} from './limiter-types.js';
import { DEFAULT_NEAR_LIMIT, type LimitedKey, type LimitedKeys, type TopLimitedOptions } from './limited-keys.js';
import { type ListEntryOptions, addressOption } from './access-list.js';
import type { AccessEntry } from './access-list-store.js';
import type { BoundStore, LimiterConfiguration, Permits, RulePermits, Store } from './store.js';
import { storeControl } from './store-capabilities.js';
import { adjustPermits, checkPermitNames, countsNothing, describePermits, permitsOption } from './rule-permits.js';
import { decisionOption } from './call-options.js';
import {
  nonNegativeFinite,
  nonNegativeOrInfinite,
  optionalSignal,
  positiveFinite,
  rateLimitKey,
  representablePeriod,
} from '../foundation/validate.js';

/** What one call asks the store for: the key, the permits, and where an observer hears the decision's source. */
interface Ask {
  readonly key: string;
  readonly permits: Permits;
  readonly note: DecisionNote | undefined;
}

/**
 * A limiter over a store: its decisions (tryAcquire, acquire, peek and their waits) and controls (reset,
 * refund, penalize, block, unblock). The rest has one part each, which the limiter delegates to: which rules
 * decide a key and their changes (LiveConfiguration), the access lists (AccessListGate), the limited-keys
 * report (LimitedKeysReport). The decision path stays here, so a memory decision costs no extra call.
 */
class StoreLimiter implements Limiter {
  readonly plans: Readonly<Record<string, readonly Algorithm[]>> | undefined;
  readonly prefix: string;
  readonly #clock: Clock;
  readonly #store: Store;
  readonly #ownsStore: boolean;
  /** Which rules decide a key (its plan's, its override's), and the changes made to them while it runs. */
  readonly #config: LiveConfiguration;
  readonly #maxKeyLength: number;
  readonly #jitterMs: number;
  readonly #shadow: boolean;
  /** What it reports of the keys it limits most (topLimited). */
  readonly #report: LimitedKeysReport;
  /** What it remembers of the keys it limits, fed every decision (undefined: limitedKeys false). */
  readonly #limited: LimitedKeys | undefined;
  /** Its allow and deny lists, in front of its rules. */
  readonly #access: AccessListGate;
  /** The lists while they hold an entry: a decision asks them only then (one field read otherwise). */
  #listed: AccessListGate | undefined;
  /** The store binding when a decision is the store's answer as it is (no plans, no shadow mode, version 1). */
  #plain: BoundStore | undefined;
  readonly #closing = new AbortController();
  /** Mirrors #closing.signal.aborted, which is a slow DOM getter on the hot path. */
  #closed = false;
  /** Takes this limiter off the list metrics read (limiterStatuses), for a store that reports its health. */
  readonly #unlist: (() => void) | undefined;

  constructor(options: LimiterOptions) {
    const setup = limiterSetup(options);
    const o = setup.options;
    const prefix = o.prefix;
    const store = setup.store;
    this.prefix = prefix;
    this.#clock = setup.clock;
    this.#store = store;
    this.#ownsStore = setup.ownsStore;
    this.#maxKeyLength = o.maxKeyLength;
    this.#jitterMs = o.retryJitterMs;
    this.#shadow = o.shadow;
    // The rules are bound first: a store may refuse them (a prefix held with other rules, a plan it cannot
    // hold), and a limiter that throws must leave nothing running (the lists subscribe and refresh on a
    // shared store; the limited-keys sketch listens to it).
    const abandon = (): void => {
      if (setup.ownsStore) store.close().catch(() => {});
    };
    try {
      this.#config = new LiveConfiguration(setup, {
        checkOpen: () => this.#checkOpen(),
        changed: () => this.#refreshPlain(),
      });
    } catch (error) {
      abandon();
      throw error;
    }
    let access: AccessListGate | undefined;
    try {
      access = new AccessListGate(
        setup,
        () => this.#checkOpen(),
        (holds) => {
          this.#listed = holds ? this.#access : undefined;
        },
      );
      this.#access = access;
      this.#report = new LimitedKeysReport(setup);
    } catch (error) {
      access?.close();
      this.#config.unbindAll().catch(() => {});
      abandon();
      throw error;
    }
    this.#limited = this.#report.sketches;
    this.#refreshPlain();
    this.plans = this.#config.plans;
    this.#unlist = 'degraded' in this.#store ? registerStatus(prefix, this.#store) : undefined;
  }

  get store(): Store {
    return this.#store;
  }

  get clock(): Clock {
    return this.#clock;
  }

  get rules(): readonly Algorithm[] {
    return this.#config.rules;
  }

  get configVersion(): number {
    return this.#config.configVersion;
  }

  #checkOpen(): void {
    if (this.#closed) throw new SluiceError('CLOSED', 'the limiter is closed');
  }

  tryAcquire(key: string, options?: TryAcquireOptions): Promise<Decision> {
    // The common call, kept to one store call and out of an async function: no options, no plans, no
    // shadow, no observer, a valid key on an open limiter. An async function allocates its frame, its
    // promise and a context for the closures of its slower paths on every call, even one that never waits:
    // more than half of what a memory decision allocated. A fault is a rejection all the same.
    if (
      options === undefined &&
      this.#plain !== undefined &&
      !this.#closed &&
      typeof key === 'string' &&
      key.length !== 0 &&
      key.length <= this.#maxKeyLength &&
      !observed()
    ) {
      try {
        const listed = this.#listed === undefined ? undefined : this.#listedOr(key, undefined, undefined);
        if (listed !== undefined) return Promise.resolve(listed);
        const decided = this.#plain.consume(key, 1, 0);
        // A store's promise is seen once it settles; a memory decision at once.
        if (decided instanceof Promise) return this.#seenWhenSettled(key, decided);
        this.#limited?.see(key, decided);
        return Promise.resolve(decided);
      } catch (error) {
        return Promise.reject(error);
      }
    }
    return this.#tryAcquireAsync(key, options);
  }

  async #seenWhenSettled(key: string, decided: Promise<Decision>): Promise<Decision> {
    const decision = await decided;
    this.#limited?.see(key, decision);
    return decision;
  }

  /** tryAcquire but for its common call. */
  async #tryAcquireAsync(key: string, options: TryAcquireOptions | undefined): Promise<Decision> {
    // No try/catch on this path: a bad key or a closed limiter is refused through #refuse, which names the call.
    if (this.#closed || typeof key !== 'string' || key.length === 0 || key.length > this.#maxKeyLength) {
      this.#refuse('tryAcquire', key);
    }
    if (!observed()) {
      const decision = await inCall('tryAcquire', () => this.#tryAcquire(key, options, undefined));
      this.#limited?.see(key, decision);
      return decision;
    }
    const note: DecisionNote = { source: undefined };
    const started = performance.now();
    const decision = await inCall('tryAcquire', () => this.#tryAcquire(key, options, note));
    this.#limited?.see(key, decision);
    this.#record(decision, note, started);
    return decision;
  }

  allow(entries: string | readonly string[], options?: ListEntryOptions): Promise<void> {
    return this.#access.allow(entries, options);
  }

  deny(entries: string | readonly string[], options?: ListEntryOptions): Promise<void> {
    return this.#access.deny(entries, options);
  }

  unlist(entries: string | readonly string[]): Promise<number> {
    return this.#access.unlist(entries);
  }

  accessList(): Promise<AccessEntry[]> {
    return this.#access.accessList();
  }

  topLimited(n?: number, options?: TopLimitedOptions): Promise<LimitedKey[]> {
    return this.#report.topLimited(n, options);
  }

  flushLimitedKeys(): Promise<void> {
    return this.#report.flushLimitedKeys();
  }

  keyHash(key: string): Promise<string> {
    return this.#report.keyHash(key);
  }

  /** Throws what the checks of `fn` say about `key` (or the limiter being closed), named for `fn`. */
  #refuse(fn: string, key: unknown): void {
    inCall(fn, () => {
      this.#checkOpen();
      rateLimitKey(key, this.#maxKeyLength);
    });
  }

  /** Hands an answered call to the observers (only while something observes). */
  #record(decision: Decision, note: DecisionNote, started: number): void {
    const source = note.source ?? this.#config.current.bound.source;
    const nearLimit =
      this.#limited?.isNear(decision) ??
      (decision.allowed && decision.shadowed !== true && decision.remaining < decision.limit * DEFAULT_NEAR_LIMIT);
    recordDecision({ limiter: this.prefix, decision, source, durationMs: performance.now() - started, nearLimit });
  }

  #tryAcquire(
    key: string,
    options: TryAcquireOptions | undefined,
    note: DecisionNote | undefined,
  ): Decision | Promise<Decision> {
    if (options === undefined && this.#config.onlyCurrent)
      return this.#listedOr(key, undefined, note) ?? this.#decideNow(this.#config.current, key, 1, note);
    knownOptions('tryAcquire options', TRY_ACQUIRE_OPTIONS, options, false);
    const permits = permitsOption(options?.permits);
    const maxWaitMs = options?.maxWaitMs === undefined ? 0 : nonNegativeOrInfinite('maxWaitMs', options.maxWaitMs);
    const signal = optionalSignal(options?.signal);
    if (signal?.aborted) throw new SluiceError('ABORTED', 'the signal was already aborted', { cause: signal.reason });
    const listed = this.#listedOr(key, addressOption(options?.address), note);
    if (listed !== undefined) return listed;
    // No await here: an async function that never suspends costs less on the hot path, and a waiting call
    // must register its sleep without delay. Only an async plan resolver is waited for.
    const ask: Ask = { key, permits, note };
    const found = this.#config.binding(key, options?.plan);
    if (found instanceof Promise) return found.then((binding) => this.#decide(binding, ask, maxWaitMs, signal));
    return this.#decide(found, ask, maxWaitMs, signal);
  }

  /**
   * The decision of the access-list entry that holds for `key` and the client `address`, when one does (the
   * rules are not asked; see AccessListGate.decide).
   */
  #listedOr(
    key: string,
    address: string | undefined,
    note: DecisionNote | undefined,
    deciding = true,
  ): Decision | Promise<Decision> | undefined {
    return this.#listed?.decide(key, address, note, deciding, this.#config.current);
  }

  #decide(
    binding: Binding,
    ask: Ask,
    maxWaitMs: number,
    signal: AbortSignal | undefined,
  ): Decision | Promise<Decision> {
    if (typeof ask.permits !== 'number') checkPermitNames(ask.permits, rulesOf(binding));
    if (maxWaitMs === 0 || this.#shadow) return this.#decideNow(binding, ask.key, ask.permits, ask.note);
    return this.#wait(binding, ask, maxWaitMs, signal);
  }

  /** One decision with no wait; in shadow mode a denial comes back allowed, marked shadowed. */
  #decideNow(
    binding: Binding,
    key: string,
    permits: Permits,
    note: DecisionNote | undefined,
  ): Decision | Promise<Decision> {
    const decision = binding.bound.consume(key, permits, 0, note);
    if (!this.#shadow && binding.plan === undefined && this.#config.version === 1 && binding.override === undefined)
      return decision;
    return decision instanceof Promise
      ? decision.then((d) => this.#reported(binding, d))
      : this.#reported(binding, decision);
  }

  /** A decision as the caller sees it: marked with its plan, and let through when shadow mode denies nothing. */
  #reported(binding: Binding, decision: Decision): Decision {
    const marked = this.#marked(binding, decision);
    return this.#shadow ? shadowed(marked) : marked;
  }

  /** A decision marked with what decided it: its plan, a changed configuration's version, a key's override. */
  #marked(binding: Binding, decision: Decision): Decision {
    const planned = binding.plan === undefined ? decision : { ...decision, plan: binding.plan };
    const version = this.#config.version;
    const versioned = version === 1 ? planned : { ...planned, configVersion: version };
    return binding.override === undefined ? versioned : { ...versioned, override: true };
  }

  async acquire(key: string, options?: AcquireOptions): Promise<number> {
    try {
      this.#checkOpen();
      rateLimitKey(key, this.#maxKeyLength);
      knownOptions('acquire options', ACQUIRE_OPTIONS, options, false);
      const permits = permitsOption(options?.permits);
      const signal = optionalSignal(options?.signal);
      if (signal?.aborted) throw new SluiceError('ABORTED', 'the signal was already aborted', { cause: signal.reason });
      const binding = await this.#config.binding(key, options?.plan);
      checkPermitNames(permits, rulesOf(binding));
      const started = this.#clock.now();
      const note: DecisionNote | undefined = observed() ? { source: undefined } : undefined;
      const observedFrom = note === undefined ? 0 : performance.now();
      const d =
        (await this.#listedOr(key, addressOption(options?.address), note)) ??
        (this.#shadow
          ? await this.#decideNow(binding, key, permits, note)
          : await this.#wait(binding, { key, permits, note }, Infinity, signal));
      this.#limited?.see(key, d);
      if (note !== undefined) this.#record(d, note, observedFrom);
      if (!d.allowed) {
        if (d.access !== undefined) {
          const why = d.access.reason === undefined ? '' : ` (${d.access.reason})`;
          throw new SluiceError(
            'NEVER_ALLOWED',
            `${JSON.stringify(key)} is on the deny list by entry ${JSON.stringify(d.access.entry)}${why}; acquire ` +
              'does not wait it out',
          );
        }
        if (d.blocked === true) {
          throw new SluiceError(
            'NEVER_ALLOWED',
            `${JSON.stringify(key)} is blocked for ${Math.ceil(d.retryAfterMs)} ms more; acquire does not wait ` +
              `out a ban`,
          );
        }
        throw new SluiceError(
          'NEVER_ALLOWED',
          `${describePermits(permits)} can never be granted by rule ${JSON.stringify(d.rule)} (limit ${d.limit})`,
        );
      }
      return this.#clock.now() - started;
    } catch (error) {
      throw callerNamed('acquire', error);
    }
  }

  /**
   * Sleeps exactly what each decision says (a reservation's wait, or a denial's retryAfterMs plus jitter),
   * never polling, and gives up as soon as the deadline cannot be met. A blocked key is not waited out: a
   * ban is a refusal, not a queue.
   */
  async #wait(binding: Binding, ask: Ask, maxWaitMs: number, signal: AbortSignal | undefined): Promise<Decision> {
    const { key, permits, note } = ask;
    const deadline = this.#clock.now() + maxWaitMs;
    const abort = signal === undefined ? this.#closing.signal : AbortSignal.any([signal, this.#closing.signal]);
    for (;;) {
      const now = this.#clock.now();
      const budget = Math.max(0, deadline - now);
      const d = this.#reported(binding, await binding.bound.consume(key, permits, binding.reserves ? budget : 0, note));
      if (d.allowed) {
        if (d.waitMs > 0) await this.#sleep(d.waitMs, abort);
        return d;
      }
      if (neverWhileAway(d)) {
        // The fail mode's share is below the permits: ask again when Redis may be back, until the deadline.
        if (budget === 0) return d;
        await this.#sleep(Math.min(FALLBACK_RETRY_MS, budget), abort);
        continue;
      }
      // Infinity: never grantable (and Infinity > Infinity is false, so it needs its own check).
      if (d.blocked === true || d.retryAfterMs === Infinity || d.retryAfterMs > budget) return d;
      const jitter = this.#jitterMs === 0 ? 0 : Math.random() * this.#jitterMs;
      await this.#sleep(Math.min(d.retryAfterMs + jitter, budget), abort);
    }
  }

  async #sleep(ms: number, signal: AbortSignal): Promise<void> {
    try {
      await (this.#clock.sleep ? this.#clock.sleep(ms, signal) : timerSleep(ms, signal));
    } catch (error) {
      if (this.#closed) throw new SluiceError('CLOSED', 'the limiter was closed while waiting', { cause: error });
      throw error;
    }
  }

  async peek(key: string, options?: PeekOptions): Promise<Decision> {
    try {
      this.#checkOpen();
      rateLimitKey(key, this.#maxKeyLength);
      knownOptions('peek options', PEEK_OPTIONS, options, false);
      const found = this.#config.binding(key, options?.plan);
      const binding = found instanceof Promise ? await found : found;
      // No await before the store's peek when no entry holds: a peek asked beside a decision in one tick
      // reaches the store in the order it was asked (Redis batches them in that order).
      const listed = this.#listedOr(key, addressOption(options?.address), undefined, false);
      if (listed !== undefined) return await listed;
      return this.#marked(binding, await binding.bound.peek(key));
    } catch (error) {
      throw callerNamed('peek', error);
    }
  }

  async reset(key: string): Promise<void> {
    try {
      this.#checkOpen();
      rateLimitKey(key, this.#maxKeyLength);
      // Every plan's rules: a key that changes plan later must not find what it used under another.
      const own = this.#config.ownBinding(key);
      if (own !== undefined) await own.bound.reset(key);
      const plans = this.#config.planBindings();
      if (plans === undefined) await this.#config.current.bound.reset(key);
      else await Promise.all([...plans].map((b) => b.bound.reset(key)));
    } catch (error) {
      throw callerNamed('reset', error);
    }
  }

  async refund(key: string, permits: number | RulePermits, options?: RefundOptions): Promise<void> {
    try {
      this.#checkOpen();
      rateLimitKey(key, this.#maxKeyLength);
      const n = adjustPermits(permits);
      knownOptions('refund options', REFUND_OPTIONS, options, false);
      const grantedMsAgo =
        options?.grantedMsAgo === undefined ? Number.NaN : nonNegativeFinite('grantedMsAgo', options.grantedMsAgo);
      const decision = decisionOption(options?.decision);
      // A denial or a shadowed grant consumed nothing.
      if (decision !== undefined && (!decision.allowed || decision.shadowed === true)) return;
      const binding = await this.#config.binding(key, options?.plan ?? decision?.plan);
      checkPermitNames(n, rulesOf(binding));
      const unrefundable = binding.rules.find((rule) => rule.scope === undefined && !rule.refundable);
      if (unrefundable !== undefined) {
        throw new SluiceError(
          'UNSUPPORTED',
          `refund: rule ${JSON.stringify(unrefundable.name)} (${unrefundable.kind}) cannot give permits back: ` +
            `with Guava's prepay the next request pays for a grant`,
        );
      }
      const refund = storeControl(binding.bound.refund, 'refund', this.#store);
      const grant = decision === undefined ? undefined : decision.source === 'fallback' ? 'fallback' : 'store';
      if (!countsNothing(n)) await refund.call(binding.bound, key, n, grantedMsAgo, grant);
    } catch (error) {
      throw callerNamed('refund', error);
    }
  }

  async penalize(key: string, permits: number | RulePermits, options?: PenalizeOptions): Promise<void> {
    try {
      this.#checkOpen();
      rateLimitKey(key, this.#maxKeyLength);
      const n = adjustPermits(permits);
      knownOptions('penalize options', PENALIZE_OPTIONS, options, false);
      const binding = await this.#config.binding(key, options?.plan);
      checkPermitNames(n, rulesOf(binding));
      const penalize = storeControl(binding.bound.penalize, 'penalize', this.#store);
      if (!countsNothing(n)) await penalize.call(binding.bound, key, n);
    } catch (error) {
      throw callerNamed('penalize', error);
    }
  }

  async block(key: string, ms: number): Promise<void> {
    try {
      this.#checkOpen();
      rateLimitKey(key, this.#maxKeyLength);
      const blockMs = positiveFinite('ms', ms);
      representablePeriod('ms', blockMs, blockMs, 'a block of');
      // A ban is the key's, whatever its plan: every plan's binding reads the same one.
      const bound = this.#config.current.bound;
      await storeControl(bound.block, 'block', this.#store).call(bound, key, blockMs);
    } catch (error) {
      throw callerNamed('block', error);
    }
  }

  async unblock(key: string): Promise<void> {
    try {
      this.#checkOpen();
      rateLimitKey(key, this.#maxKeyLength);
      const bound = this.#config.current.bound;
      await storeControl(bound.unblock, 'unblock', this.#store).call(bound, key);
    } catch (error) {
      throw callerNamed('unblock', error);
    }
  }

  reconfigure(rules: Rules, options?: ReconfigureOptions): Promise<LimiterConfiguration> {
    return this.#config.reconfigure(rules, options);
  }

  override(key: string, rules: Rules): Promise<void> {
    return this.#config.override(key, rules);
  }

  removeOverride(key: string): Promise<void> {
    return this.#config.removeOverride(key);
  }

  overrides(options?: OverridesOptions): Promise<OverridesPage> {
    return this.#config.overrides(options);
  }

  /** The binding a decision is the store's answer of as it is, while there is one (see #plain). */
  #refreshPlain(): void {
    const config = this.#config;
    const plain = !this.#shadow && config.onlyCurrent && config.version === 1;
    this.#plain = plain ? config.current.bound : undefined;
  }

  async ready(): Promise<void> {
    try {
      this.#checkOpen();
      await this.#store.ready?.();
      await this.#access.loaded;
    } catch (error) {
      throw callerNamed('ready', error);
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#closing.abort(new SluiceError('CLOSED', 'the limiter was closed'));
    this.#unlist?.();
    await this.#limited?.close();
    this.#access.close();
    // Unbound from a shared store, a closed limiter holds nothing there and frees its prefix.
    await this.#config.unbindAll();
    if (this.#ownsStore) await this.#store.close();
  }
}

/** A denial as shadow mode reports it: allowed, marked, with the denial's numbers. */
function shadowed(decision: Decision): Decision {
  return decision.allowed ? decision : { ...decision, allowed: true, shadowed: true };
}

/**
 * Creates a limiter. The same call works over every store: memory (default), Redis, leased, divided.
 *
 * @example
 * const limiter = createLimiter({ rules: tokenBucket({ capacity: 100, refillPerSecond: 10 }) })
 * const d = await limiter.tryAcquire(`user:${id}`)
 * if (!d.allowed) return tooManyRequests(d.retryAfterMs)
 *
 * @example
 * const api = createLimiter({
 *   plans: { free: fixedWindow({ limit: 100, windowMs: 60_000 }), pro: fixedWindow({ limit: 1_000, windowMs: 60_000 }) },
 *   plan: async (key) => (await accounts.tier(key)) ?? 'free',
 * })
 */
export function createLimiter(options: LimiterOptions): Limiter {
  return inCall('createLimiter', () => {
    return new StoreLimiter(options);
  });
}
