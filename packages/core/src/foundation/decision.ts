/** One rule's standing inside a policy decision (for headers such as RateLimit-Policy). */
export interface RuleStatus {
  readonly name: string;
  readonly limit: number;
  readonly windowMs: number;
  readonly remaining: number;
  readonly resetAfterMs: number;
  /** Whether this rule on its own would have allowed the request. */
  readonly allowed: boolean;
}

/** The access-list entry that decided a request, in place of the rules (`limiter.allow`, `limiter.deny`). */
export interface AccessMatch {
  readonly list: 'allow' | 'deny';
  /** The entry that matched: the key, an address, or a CIDR range. */
  readonly entry: string;
  /** Why the entry is there, when it was given one. */
  readonly reason?: string;
}

/**
 * The answer to one request. Being limited is a normal result, never an exception.
 *
 * For a policy of several rules, the numbers are those of the tightest rule (`rule` names it) and
 * `rules` lists every rule.
 */
export interface Decision {
  readonly allowed: boolean;
  readonly limit: number;
  /** Whole permits left after this decision. */
  readonly remaining: number;
  /** When denied: wait this long and the same request succeeds if nothing else arrives (Infinity: never). 0 when allowed. */
  readonly retryAfterMs: number;
  /** Time until the limit is fully available again if nothing else arrives. */
  readonly resetAfterMs: number;
  /** For a granted reservation: the time the caller had to sit out (tryAcquire and acquire already waited it). */
  readonly waitMs: number;
  /** The rule these numbers come from. */
  readonly rule: string;
  /** Every rule's standing, present when the limiter has more than one rule. */
  readonly rules?: readonly RuleStatus[];
  /**
   * Shadow mode only (`createLimiter({ shadow: true })`): true when the rules would have denied this request.
   * It is allowed all the same and consumed nothing, exactly like a denial; `remaining`, `retryAfterMs` and
   * `rules` are the numbers of that denial.
   */
  readonly shadowed?: true;
  /**
   * True when denied because the key is blocked: a rule's `blockMs` ban (started by this request's denial or an
   * earlier one) or `limiter.block(key, ms)`. `retryAfterMs` is then the rest of the block (or the rules' own
   * wait, when longer); nothing was consumed.
   */
  readonly blocked?: true;
  /** With plans (`createLimiter({ plans })`): the plan whose rules decided. */
  readonly plan?: string;
  /**
   * Once `limiter.reconfigure` changed the rules: the version of the configuration that decided (see
   * Limiter.configVersion). Left out while the limiter runs its first configuration.
   */
  readonly configVersion?: number;
  /** True when the key's own rules decided (`limiter.override`), in place of the limiter's or its plan's. */
  readonly override?: true;
  /**
   * `'fallback'` when a fail mode decided because the store's Redis was away or late (`failMode` 'local',
   * 'open' or 'closed'): the numbers are this node's, not the fleet's. Undefined when the store's own backend
   * decided (memory, Redis, a lease, a divided share). `limiter.refund(key, n, { decision })` gives a grant
   * back where it was counted, and nowhere for a grant nothing counted (failMode 'open').
   */
  readonly source?: 'fallback';
  /**
   * Set when the limiter's allow or deny list decided, before the rules: an allowed key's decision shows its
   * limit whole (nothing consumed); a denied one's `retryAfterMs` lasts until the entry expires (Infinity when
   * it does not). The HTTP adapters send a denied one's reason in the 429's body.
   */
  readonly access?: AccessMatch;
}

/**
 * How often a waiting call (`acquire`, `tryAcquire` with `maxWaitMs`, a throttle's `run`) asks again when the
 * store's fail mode, deciding while Redis is away, can never grant its permits under the fail mode's share of
 * a limit: never while Redis is away is not never, so the call waits for Redis (or for its deadline).
 */
export const FALLBACK_RETRY_MS = 1_000;

/**
 * Whether a denial is "never" only while the store's Redis is away: a fail mode's share of a limit below the
 * permits asked (a rule's own limit below them is never on any store, and has no `source`).
 * @example
 * if (neverWhileAway(decision)) await sleep(FALLBACK_RETRY_MS) // and ask again
 */
export function neverWhileAway(decision: Decision): boolean {
  return decision.source === 'fallback' && decision.retryAfterMs === Infinity && decision.blocked !== true;
}
