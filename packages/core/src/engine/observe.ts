import { reportCallbackError } from '../foundation/callbacks.js';
import type { Decision } from '../foundation/decision.js';
import { SluiceTypeError } from '../foundation/errors.js';
import { describe } from '../foundation/validate.js';

/**
 * Where a decision was made: the memory store, an engine (a Redis script, a PostgreSQL transaction, or
 * 'engine' for one of your own), exact mode's deny cache, a fail mode while
 * the store's backend is away, a leased batch, this node's share of a divided limit, or the limiter's
 * allow or deny list (before any of them).
 */
export type DecisionSource =
  | 'memory'
  | 'redis'
  | 'postgres'
  | 'engine'
  | 'deny_cache'
  | 'fallback'
  | 'lease'
  | 'share'
  | 'access_list';

/**
 * Filled in by a store whose decisions come from more than one place (see BoundStore.consume): a limiter
 * hands one to `consume` only while something observes decisions, so a store never pays for it otherwise.
 */
export interface DecisionNote {
  source: DecisionSource | undefined;
}

/** One `tryAcquire` or `acquire` answered, as an observer sees it. */
export interface ObservedDecision {
  /** The limiter's prefix: its name in metrics. Never the key. */
  readonly limiter: string;
  /** The decision as the caller got it (in shadow mode: allowed, with `shadowed: true` where the rules denied). */
  readonly decision: Decision;
  /** Undefined for a store of your own that does not say (BoundStore.source). */
  readonly source: DecisionSource | undefined;
  /** From the call to its answer, waits included, in ms. */
  readonly durationMs: number;
  /** A grant that left less than the limiter's `limitedKeys.nearLimit` (20% unless set) of the limit. */
  readonly nearLimit: boolean;
}

/** Why a throttled call stopped waiting without starting. */
export type ThrottleLeaveReason = 'wait_expired' | 'aborted' | 'closed' | 'queue_full' | 'never_allowed' | 'failed';

/**
 * What a throttle (outgoing calls) did, as an observer sees it. `queued` is how many calls of the key wait
 * in this process after the event. `throttle` is the throttle's name (its limiter's prefix); the key is
 * here for logs and tests, never made a metric attribute.
 */
export type ThrottleEvent =
  | { readonly type: 'queued'; readonly throttle: string; readonly key: string; readonly queued: number }
  | {
      readonly type: 'started';
      readonly throttle: string;
      readonly key: string;
      /** From the call to `run` to its start, in ms: the queue, the rate and any pause. */
      readonly waitedMs: number;
      readonly queued: number;
    }
  | {
      readonly type: 'left';
      readonly throttle: string;
      readonly key: string;
      readonly reason: ThrottleLeaveReason;
      readonly waitedMs: number;
      readonly queued: number;
    }
  | {
      readonly type: 'paused';
      readonly throttle: string;
      /** Undefined: every key of the throttle. */
      readonly key: string | undefined;
      readonly ms: number;
      /** 'here': this process paused; 'fleet': another node did, and this one heard it. */
      readonly origin: 'here' | 'fleet';
    };

/**
 * What observes every limiter in the process (the hook `@sluice/otel` is built on). Every method is
 * optional; one that throws is reported (SLUICE_CALLBACK_ERROR) and never reaches a caller.
 */
export interface SluiceObserver {
  /** A tryAcquire or acquire was answered. */
  decision?(event: ObservedDecision): void;
  /** A leased limiter took `permits` from Redis for this node. */
  leased?(limiter: string, permits: number): void;
  /** A throttle queued, started, dropped or paused a call. */
  throttle?(event: ThrottleEvent): void;
}

/** A limiter's standing now, as `limiterStatuses()` reads it. */
export interface LimiterStatus {
  readonly limiter: string;
  /** True while a fail mode decides because its Redis is away; undefined for a store with no backend. */
  readonly degraded: boolean | undefined;
  /** A divided limiter's share of the fleet's limit (0..1); undefined for other modes. */
  readonly share: number | undefined;
}

/** What a store reports its standing through (RedisStore, a leased store, a divided binding). */
export interface StatusSource {
  readonly degraded?: boolean | undefined;
  readonly share?: number | undefined;
}

interface Registration {
  readonly limiter: string;
  readonly source: WeakRef<StatusSource>;
}

interface Hub {
  /** Read on every decision: a plain field, so a process with no observer pays one load and a branch. */
  active: boolean;
  observers: SluiceObserver[];
  statuses: Set<Registration>;
  /** The size at which registering next drops the registrations of collected limiters. */
  pruneAt: number;
}

// One hub per process, on globalThis: a program that loads core both as ESM and as CommonJS (or two copies
// of it) still has one set of observers and sees every limiter.
const HUB_KEY = Symbol.for('sluice.observe.v1');
const host = globalThis as { [HUB_KEY]?: Hub };
const hub: Hub = (host[HUB_KEY] ??= { active: false, observers: [], statuses: new Set(), pruneAt: 64 });

/** True while at least one observer is registered (the limiter's hot path reads only this). */
export function observed(): boolean {
  return hub.active;
}

/**
 * Registers an observer of every limiter in the process, those created before and after; returns the
 * function that removes it. Registering the same observer twice has no further effect.
 *
 * @example
 * const stop = observeSluice({ decision: (e) => { if (!e.decision.allowed) denials.inc({ limiter: e.limiter }) } })
 */
export function observeSluice(observer: SluiceObserver): () => void {
  if (typeof observer !== 'object' || observer === null) {
    throw new SluiceTypeError(
      'observer',
      observer,
      `observeSluice takes an object with decision(), leased() and/or throttle(), got ${describe(observer)}`,
    );
  }
  for (const name of ['decision', 'leased', 'throttle'] as const) {
    const fn = (observer as Record<string, unknown>)[name];
    if (fn !== undefined && typeof fn !== 'function') {
      throw new SluiceTypeError(
        `observer.${name}`,
        fn,
        `observeSluice: observer.${name} must be a function, got ${describe(fn)}`,
      );
    }
  }
  if (!hub.observers.includes(observer)) hub.observers = [...hub.observers, observer];
  hub.active = true;
  return () => {
    hub.observers = hub.observers.filter((o) => o !== observer);
    hub.active = hub.observers.length > 0;
  };
}

/**
 * Calls `method` of every observer that has it with `a` (and `b`), each isolated: one that throws is reported
 * (SLUICE_CALLBACK_ERROR) and the others are still told. No closure or array per call: decisions pass here.
 */
function notify(method: keyof SluiceObserver, a: unknown, b?: unknown): void {
  for (const observer of hub.observers) {
    const handler = observer[method] as ((this: SluiceObserver, a: unknown, b?: unknown) => void) | undefined;
    if (handler === undefined) continue;
    try {
      handler.call(observer, a, b);
    } catch (error) {
      reportCallbackError(undefined, `observer ${method}()`, error);
    }
  }
}

/** Hands a decision to every observer (called by limiters, only while `observed()`). */
export function recordDecision(event: ObservedDecision): void {
  notify('decision', event);
}

/**
 * Tells observers that a leased limiter took `permits` from Redis.
 * @example
 * reportLease(prefix, reply.granted) // counted by sluice.lease.permits
 */
export function reportLease(limiter: string, permits: number): void {
  notify('leased', limiter, permits);
}

/**
 * Tells observers what a throttle did (called by throttles, only while `observed()`).
 * @example
 * if (observed()) reportThrottle({ type: 'queued', throttle: prefix, key, queued: 3 })
 */
export function reportThrottle(event: ThrottleEvent): void {
  notify('throttle', event);
}

/**
 * Lists `source` as the standing of limiter `limiter` until the returned function is called (its close) or
 * the source is garbage collected: a limiter never closed is not kept alive by being listed.
 * @example
 * const unlist = registerStatus(prefix, store) // store.degraded read by sluice.store.degraded
 * // on close: unlist()
 */
export function registerStatus(limiter: string, source: StatusSource): () => void {
  const registration: Registration = { limiter, source: new WeakRef(source) };
  // Nothing may read the list for a long time (no metrics): limiters that were never closed are dropped here.
  if (hub.statuses.size >= hub.pruneAt) {
    limiterStatuses();
    hub.pruneAt = Math.max(64, 2 * hub.statuses.size);
  }
  hub.statuses.add(registration);
  return () => {
    hub.statuses.delete(registration);
  };
}

/**
 * Every listed limiter's standing now (a metrics gauge reads this when it is collected).
 * @example
 * for (const s of limiterStatuses()) if (s.degraded) log.warn(`limiter ${s.limiter} decides by its fail mode`)
 */
export function limiterStatuses(): LimiterStatus[] {
  const out: LimiterStatus[] = [];
  for (const registration of hub.statuses) {
    const source = registration.source.deref();
    if (source === undefined) {
      hub.statuses.delete(registration);
      continue;
    }
    out.push({ limiter: registration.limiter, degraded: source.degraded, share: source.share });
  }
  return out;
}
