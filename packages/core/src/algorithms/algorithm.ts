/** The algorithms sluice implements; a Redis script exists for each under the same name. */
export type AlgorithmKind =
  | 'fixedWindow'
  | 'calendarWindow'
  | 'slidingWindowLog'
  | 'slidingWindowCounter'
  | 'tokenBucket'
  | 'leakyBucket'
  | 'gcra'
  | 'smoothBursty'
  | 'smoothWarmingUp';

/**
 * What one decision of an algorithm produced. A denial consumes nothing: its `state` is the state it was
 * given, or, for a key never seen (or one the algorithm forgot), an anchor from which refilling starts.
 */
export interface Outcome<S> {
  readonly allowed: boolean;
  /** Permits left after this decision (whole permits, never negative). */
  readonly remaining: number;
  /** On a denial: wait this long and the same request is granted if nothing else arrived. Infinity = never. */
  readonly retryAfterMs: number;
  /** Time until the rule is back to its full limit if nothing else arrives. */
  readonly resetAfterMs: number;
  /** On a grant that is a reservation: how long the caller must wait before acting. Otherwise 0. */
  readonly waitMs: number;
  readonly state: S | undefined;
  /**
   * How long the returned state matters from now (a denial's unchanged state included); past it the state
   * decides as a fresh one would. A store writing several rules together keeps them all for the longest.
   */
  readonly ttlMs: number;
}

/**
 * A rate-limiting rule: a pure, synchronous state machine over plain numeric state. No timers, no I/O,
 * no clock of its own: `nowMs` is an argument, so the same inputs always give the same outcome, here and
 * in the rule's Redis script.
 */
export interface Algorithm<S = unknown> {
  readonly kind: AlgorithmKind;
  /** Unique within a policy; names the rule in keys, decisions and headers. */
  readonly name: string;
  /**
   * What the rule counts against: undefined for the request's own key, a fixed string for a rule shared
   * by every key (a global rule), or a function of the request's key (a per-tenant rule beside per-user ones).
   */
  readonly scope?: RuleScope | undefined;
  /** The limit reported in decisions and headers. */
  readonly limit: number;
  /** The period the limit applies to, for headers (a bucket reports the time it takes to refill). */
  readonly windowMs: number;
  /** True when the rule can grant a request now that the caller must sit out (`waitMs > 0`). */
  readonly reserves: boolean;
  /**
   * True when a denial of one permit with no wait allowed is the same answer, numbers included, until its
   * retryAfterMs if nothing else arrives: only lack of a permit denies it, and none reappears before then.
   * A deny cache may answer such denials locally. (Leaky shape mode denies for the wait instead.)
   */
  readonly stableDenials: boolean;
  /**
   * The name this rule takes in a limiter's plans when it was given none (undefined when it was named): its
   * kind and the period that shapes its state, without its limit (`fw-1m`, `tb`), so that one unnamed rule
   * of a shape in every plan is one state, and a key keeps its usage when it changes plan.
   */
  readonly planName: string | undefined;
  /**
   * What its stored state means: rules whose formats are equal read each other's state as their own (a
   * plan switch carries usage over). The kind, and any parameter that changes the meaning (a window's
   * length, a leaky bucket's mode); limits and rates do not.
   */
  readonly stateFormat: string;
  /** The validated parameters, by name. */
  readonly params: Readonly<Record<string, number | string>>;
  /** The parameters in the order its Lua twin reads them (p[1], p[2], ...). */
  readonly wireParams: readonly (number | string)[];
  /** Whether a grant can be given back exactly (refund, a policy refunded slot by slot); Guava's prepay cannot. */
  readonly refundable: boolean;
  /**
   * How long a denial by this rule bans the request's key (0: no ban). See RuleOptions.blockMs.
   */
  readonly blockMs: number;
  /** The most permits it can grant at once: the burst a lease batch is carved from. */
  readonly burst: number;
  /** Its sustained rate, in permits per second. */
  readonly ratePerSecond: number;
  /** How leased mode takes from it in batches, or undefined when its grants cannot be split across nodes. */
  readonly lease: LeaseModel | undefined;
  /**
   * The same rule holding `fraction` (0 < fraction <= 1) of this one's limit: what one node enforces when a
   * fleet's limit is divided. Counts round down but to at least 1 (a node can always admit something); rates
   * scale exactly; windows, burst spans and warm-ups stay. Name and scope are kept.
   */
  share(fraction: number): Algorithm<S>;
  /**
   * A state carried over to a share `ratio` times the one it was decided under: what was used or stored is
   * scaled, never refilled. (A state that holds times, not counts, carries over as it is.)
   */
  rescale(state: S, ratio: number): S;
  /**
   * The permits `state` counts against its key at `nowMs`: a window's count, a bucket's capacity less its
   * tokens, GCRA's time ahead in permits (past the limit after a penalty; fractional where the rule refills
   * continuously; 0 for a state that decides as a fresh one would). What carries over when the rule's
   * parameters change (see carryState). For Guava's smooth rules: the burst less the permits stored.
   */
  usedAt(state: S | undefined, nowMs: number): number;
  /**
   * Decides `permits` at `nowMs`. `maxWaitMs` is how long the caller is willing to wait for a reservation
   * (0: grant only what is available now); rules that do not reserve ignore it.
   */
  consume(state: S | undefined, nowMs: number, permits: number, maxWaitMs: number): Outcome<S>;
  /**
   * Gives back up to `permits` at `nowMs`, never beyond a fresh state (a full bucket, an empty window): the
   * state as if that many grants had not been made. `grantedAtMs` (NaN: unknown) is when the grant was
   * decided, or a time no later: a window rule then gives back only from the window the grant was counted
   * in, and a log only grants made since, oldest first, and none once a window has passed since (the grant
   * may have left it); unknown, the newest grants are given back. Buckets
   * refill linearly, so for them the time does not matter. Only for a `refundable` rule.
   */
  refund(state: S | undefined, nowMs: number, permits: number, grantedAtMs: number): Adjusted<S>;
  /**
   * Takes `permits` at `nowMs` whatever the limit: a charge after the fact (a response's real cost). The
   * state may go past the limit (a window's count above it, a bucket below zero), and the rule denies until
   * it drains. A grant's bookkeeping without its check: for a reserving rule, as a reservation never waited.
   */
  penalize(state: S | undefined, nowMs: number, permits: number): Adjusted<S>;
}

/** A state after a refund or a penalty, and how long it matters from now (see Outcome.ttlMs). */
export interface Adjusted<S> {
  /** undefined: the state decides as a fresh one would (a store may drop it). */
  readonly state: S | undefined;
  readonly ttlMs: number;
}

/**
 * How leased mode takes from a rule: as the token bucket it behaves like (a token bucket, GCRA), or as its
 * window (a fixed window; a sliding window counter, leased per window).
 */
export type LeaseModel =
  | { readonly kind: 'bucket'; readonly capacity: number; readonly refillPerSecond: number; readonly initial: number }
  | {
      readonly kind: 'fixed' | 'sliding';
      readonly limit: number;
      /** The longest a window lasts. */
      readonly windowMs: number;
      /** The window instant `nowMs` falls in: a lease taken in it dies at its end. */
      readonly windowAt: (nowMs: number) => LeaseWindow;
    };

/** One window of a windowed rule, as two instants (ms): [start, end). */
export interface LeaseWindow {
  readonly start: number;
  readonly end: number;
}

/**
 * A count scaled to a share: rounded down (never more than the share), but at least 1.
 * @example
 * shareOf(10, 1 / 3) // 3: a node's part of 10 slots shared by 3 nodes
 */
export function shareOf(count: number, fraction: number): number {
  return Math.max(1, Math.floor(count * fraction + EPSILON));
}

/** A rule's scope, its own identity: a fixed key, or one derived from the request's key. */
export type RuleScope = string | ((requestKey: string) => string);

/** Options every algorithm takes. */
export interface RuleOptions {
  /**
   * Names the rule within a policy (letters, digits, `_`, `.`, `-`; at most 64).
   * @default a short name of the algorithm, e.g. `tb` for tokenBucket
   */
  name?: string;
  /**
   * Count this rule against another identity than the request's key: a fixed string makes a rule every key
   * shares (`scope: 'global'`), a function derives one (`scope: (k) => k.split(':')[0]` for a per-tenant rule).
   * @default the request's key
   */
  scope?: RuleScope;
  /**
   * A ban after the limit is hit (brute-force protection): when this rule denies a request, the request's key
   * is blocked for `blockMs` from that instant, and every request of that key meanwhile is denied with
   * `blocked: true` and `retryAfterMs` the rest of the block, even after the rule itself would allow again.
   * A denial during a block does not extend it. Only for rules counted against the request's own key.
   * @default 0 (no ban)
   */
  blockMs?: number;
}

/**
 * Slack for comparisons of derived permit counts: a retry at exactly `now + retryAfterMs` must not fail
 * because `a * b / c` rounded one ulp the wrong way. Far below one permit, so it never admits one more.
 * The Redis scripts use the same constant.
 */
export const EPSILON = 1e-9;

/**
 * Time slack for decisions derived from elapsed time. Epoch-scale milliseconds (about 1.7e12) carry only
 * about 0.24 us of precision, so "wait exactly retryAfterMs" can land a fraction of a microsecond short;
 * decisions are exact to within this tolerance (a grant may come up to 1 us early, never a permit more).
 */
export const TOLERANCE_MS = 1e-3;

export function outcome<S>(
  allowed: boolean,
  state: S | undefined,
  remaining: number,
  retryAfterMs: number,
  resetAfterMs: number,
  waitMs: number,
  ttlMs: number,
): Outcome<S> {
  return { allowed, state, remaining, retryAfterMs, resetAfterMs, waitMs, ttlMs };
}

/** A request that can never fit: denied with `retryAfterMs: Infinity`, state untouched (it matters for ttlMs). */
export function neverFits<S>(state: S | undefined, remaining: number, resetAfterMs: number, ttlMs: number): Outcome<S> {
  return outcome(false, state, remaining, Infinity, resetAfterMs, 0, ttlMs);
}

/** Whole permits left, never negative, robust to a value a hair under an integer. */
export function wholePermits(x: number): number {
  return x > 0 ? Math.floor(x + EPSILON) : 0;
}
