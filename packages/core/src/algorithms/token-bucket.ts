import { SluiceRangeError, inCall } from '../foundation/errors.js';
import { knownOptions, type OptionNames } from '../foundation/options.js';
import { nonNegativeInteger, positiveFinite, positiveInteger, representablePeriod } from '../foundation/validate.js';
import {
  type Adjusted,
  type Algorithm,
  type Outcome,
  type RuleOptions,
  EPSILON,
  TOLERANCE_MS,
  neverFits,
  outcome,
  shareOf,
  wholePermits,
} from './algorithm.js';
import { RULE_OPTIONS, commonRuleOptions, ownOptions } from './rule-common.js';
import { defaultRuleName, ratePart } from './rule-name.js';

/** Options of tokenBucket: a bucket of `capacity` tokens refilled at a steady rate. */
export interface TokenBucketOptions extends RuleOptions {
  /** Tokens the bucket holds when full: the largest burst (an integer >= 1). */
  capacity: number;
  /** Tokens added per second, continuously (a finite number > 0). */
  refillPerSecond: number;
  /**
   * Tokens in a bucket seen for the first time (0 to capacity).
   * @default capacity
   */
  initialPermits?: number;
  /**
   * How far below zero a reservation may take the bucket (an integer >= 0). A caller that passes
   * `maxWaitMs` reserves tokens it does not have yet and waits off its own debt, first come first served.
   * 0 disables reservation: waiting callers retry instead.
   * @default capacity
   */
  maxDebt?: number;
}

const TOKEN_BUCKET_OPTIONS: OptionNames<TokenBucketOptions> = {
  ...RULE_OPTIONS,
  capacity: true,
  refillPerSecond: true,
  initialPermits: true,
  maxDebt: true,
};

/** A token bucket's state: tokens (negative while debt is owed) at a time. */
export interface TokenBucketState {
  /** Tokens at `updatedAt`; negative while reservations are being waited off. */
  readonly tokens: number;
  readonly updatedAt: number;
}

/**
 * Holds up to `capacity` tokens, refilled at `refillPerSecond`; a request takes `permits` tokens. Over
 * any interval T it admits at most capacity + refillPerSecond x T (counting a reservation when its wait ends).
 *
 * @example
 * const api = tokenBucket({ capacity: 100, refillPerSecond: 10 })
 */
export function tokenBucket(options: TokenBucketOptions): Algorithm<TokenBucketState> {
  return inCall('tokenBucket', () => {
    knownOptions('tokenBucket options', TOKEN_BUCKET_OPTIONS, options, true);
    const capacity = positiveInteger('capacity', options.capacity);
    const refillPerSecond = positiveFinite('refillPerSecond', options.refillPerSecond);
    const initial =
      options.initialPermits === undefined ? capacity : nonNegativeInteger('initialPermits', options.initialPermits);
    if (initial > capacity) {
      throw new SluiceRangeError(
        'initialPermits',
        initial,
        `initialPermits must be at most capacity (${capacity}), got ${initial}`,
      );
    }
    const maxDebt = options.maxDebt === undefined ? capacity : nonNegativeInteger('maxDebt', options.maxDebt);
    representablePeriod(
      'refillPerSecond',
      refillPerSecond,
      ((capacity + maxDebt) * 1000) / refillPerSecond,
      'a full refill (capacity + maxDebt tokens) take',
    );
    const parts: Array<string | number> = [capacity, ratePart(refillPerSecond)];
    if (initial !== capacity) parts.push(`i${initial}`);
    if (maxDebt !== capacity) parts.push(`d${maxDebt}`);
    const common = commonRuleOptions(options, defaultRuleName('tb', parts), 'tb');
    const { name, scope } = common;
    const own = ownOptions(common);
    const tokensPerMs = refillPerSecond / 1000;
    // Tokens past the level at which a state stops mattering: full, or full for one more refill period.
    const forgetAt = initial < capacity ? 2 * capacity : capacity;
    const tolerance = EPSILON + TOLERANCE_MS * tokensPerMs;

    /**
     * The bucket at `nowMs`: its tokens after refilling, the time they are counted at, and whether the state
     * was forgotten. Written into one object per rule (decisions are synchronous), so a decision allocates none.
     */
    const level = { tokens: 0, now: 0, fresh: true };
    function refill(state: TokenBucketState | undefined, nowMs: number): typeof level {
      level.tokens = initial;
      level.now = nowMs;
      level.fresh = true;
      if (state !== undefined) {
        // max(): a clock that steps back must not refill the same time twice.
        const now = Math.max(state.updatedAt, nowMs);
        const gained = ((now - state.updatedAt) * refillPerSecond) / 1000;
        const refilled = state.tokens + gained;
        // With initialPermits below capacity, a key that stayed full for a whole refill period is forgotten and starts
        // again from initialPermits. Not at the instant it fills up: a request for the full capacity is told to retry
        // exactly then. Deciding it here (not by a store's expiry) makes every store forget at the same instant.
        // Full at this capacity: tokens kept above it (a plan of a larger capacity) are capped, never forgotten.
        if (!(initial < capacity && Math.min(state.tokens, capacity) + gained >= 2 * capacity)) {
          level.tokens = Math.min(capacity, refilled);
          level.now = now;
          level.fresh = false;
        }
      }
      return level;
    }

    function consume(
      state: TokenBucketState | undefined,
      nowMs: number,
      permits: number,
      maxWaitMs: number,
    ): Outcome<TokenBucketState> {
      const { tokens, now, fresh } = refill(state, nowMs);
      if (fresh) state = undefined;
      const fullAfterMs = ((capacity - tokens) * 1000) / refillPerSecond;
      const lifeMs = ((forgetAt - tokens) * 1000) / refillPerSecond;
      if (permits > capacity) return neverFits(state, wholePermits(tokens), fullAfterMs, lifeMs);
      const immediate = tokens + tolerance >= permits;
      // Compared in tokens, not ms: what the bucket will hold by the end of the caller's budget.
      const affordable = tokens + maxWaitMs * tokensPerMs + tolerance >= permits;
      if (immediate || (affordable && tokens - permits + maxDebt >= -tolerance)) {
        const left = tokens - permits;
        const ttlMs = ((forgetAt - left) * 1000) / refillPerSecond;
        const waitMs = immediate
          ? 0
          : Math.min(((permits - tokens) * 1000) / refillPerSecond, maxWaitMs) + (now - nowMs);
        return outcome(true, { tokens: left, updatedAt: now }, wholePermits(left), 0, ttlMs, waitMs, ttlMs);
      }
      // Retry once the wait fits the caller's budget and the debt fits maxDebt.
      const waitMs = ((permits - tokens) * 1000) / refillPerSecond;
      const debtWaitMs = ((permits - maxDebt - tokens) * 1000) / refillPerSecond;
      const retryAfterMs = Math.max(waitMs - maxWaitMs, debtWaitMs) + (now - nowMs);
      // A key seen for the first time is anchored even when refused, so its initial fill starts refilling.
      const kept = state ?? { tokens, updatedAt: now };
      return outcome(false, kept, wholePermits(tokens), retryAfterMs, fullAfterMs, 0, lifeMs);
    }

    /** The state holding `tokens` at `now`, and how long it matters. */
    function adjusted(tokens: number, now: number, nowMs: number): Adjusted<TokenBucketState> {
      return {
        state: { tokens, updatedAt: now },
        ttlMs: ((forgetAt - tokens) * 1000) / refillPerSecond + (now - nowMs),
      };
    }

    // Refilling is linear, so giving tokens back undoes a grant whenever it was made. Never above capacity;
    // a fresh bucket (never seen, or forgotten) has nothing to get back.
    function refund(state: TokenBucketState | undefined, nowMs: number, permits: number): Adjusted<TokenBucketState> {
      const { tokens, now, fresh } = refill(state, nowMs);
      if (fresh) return { state: undefined, ttlMs: 0 };
      return adjusted(Math.min(capacity, tokens + permits), now, nowMs);
    }

    // Below zero and past maxDebt if need be: the bucket denies until it refills.
    function penalize(state: TokenBucketState | undefined, nowMs: number, permits: number): Adjusted<TokenBucketState> {
      const { tokens, now } = refill(state, nowMs);
      return adjusted(tokens - permits, now, nowMs);
    }

    return {
      kind: 'tokenBucket',
      name,
      scope,
      limit: capacity,
      windowMs: Math.max(1, Math.ceil((capacity * 1000) / refillPerSecond)),
      reserves: maxDebt > 0,
      // A bucket that starts part-filled forgets a key that stayed full for a refill period, and the key's tokens
      // then drop back to initialPermits: time can make a denial's answer worse, so its denials are not cached.
      stableDenials: initial === capacity,
      params: { capacity, refillPerSecond, initialPermits: initial, maxDebt },
      wireParams: [capacity, refillPerSecond, initial, maxDebt],
      planName: common.planName,
      stateFormat: 'tokenBucket',
      refundable: true,
      blockMs: common.blockMs,
      burst: capacity,
      ratePerSecond: refillPerSecond,
      lease: { kind: 'bucket', capacity, refillPerSecond, initial },
      share(fraction) {
        const shared = shareOf(capacity, fraction);
        return tokenBucket({
          ...own,
          capacity: shared,
          refillPerSecond: refillPerSecond * fraction,
          // The same fill as the whole bucket (a full bucket's share starts full, whatever the rounding of the capacity).
          initialPermits: Math.min(shared, Math.floor((initial / capacity) * shared + EPSILON)),
          maxDebt: Math.floor(maxDebt * fraction + EPSILON),
        });
      },
      rescale: (state, ratio) => ({ ...state, tokens: state.tokens * ratio }),
      usedAt(state, nowMs) {
        const { tokens, fresh } = refill(state, nowMs);
        return fresh ? 0 : capacity - tokens;
      },
      consume,
      refund,
      penalize,
    };
  });
}
