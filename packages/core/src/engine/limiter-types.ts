/**
 * The public face of a limiter: the `Limiter` interface and the options of its calls, each beside the list of
 * its names (typed against it, so the compiler refuses a missing or an extra name) that knownOptions checks a
 * call's options with: `limiter.tryAcquire('k', { permit: 5 })` is refused naming `permit` instead of
 * charging the default 1 permit. What implements it (limiter.ts) and what builds on it (adapters, throttles)
 * import these from here, not the class.
 */

import type { Algorithm } from '../algorithms/algorithm.js';
import type { CarryMode } from '../algorithms/carry.js';
import type { Clock } from '../foundation/clock.js';
import type { Decision } from '../foundation/decision.js';
import type { OptionNames } from '../foundation/options.js';
import type { ListEntryOptions } from './access-list.js';
import type { AccessEntry } from './access-list-store.js';
import type { LimitedKey, TopLimitedOptions } from './limited-keys.js';
import type { Rules } from './policy.js';
import type { LimiterConfiguration, RulePermits, Store } from './store.js';

/** Options of every call that decides a key under one of a limiter's plans. */
export interface PlanOption {
  /**
   * The plan whose rules decide (a limiter with plans only).
   * @default the limiter's `plan` resolver, else its first plan
   */
  plan?: string | undefined;
}

/** Options of `limiter.tryAcquire`: the permits asked, how long it may wait, the request's plan and address. */
export interface TryAcquireOptions extends PlanOption {
  /**
   * What the call counts: the same number of permits against every rule, or each rule's own count by rule
   * name (`{ rpm: 1, tpm: 1_200 }`: one request and 1,200 tokens, decided at once; a rule not named counts 0).
   * @default 1
   */
  permits?: number | RulePermits | undefined;
  /**
   * How long the call may wait for the permits: sleeping off a reservation, or sleeping until a denied
   * request can succeed. 0 decides at once.
   * @default 0
   */
  maxWaitMs?: number | undefined;
  /** Aborting rejects a waiting call with SluiceError('ABORTED'). */
  signal?: AbortSignal | undefined;
  /**
   * The client's IP address, as your server knows it (the socket's peer, or what your own proxies wrote,
   * read with your trust settings), for the access lists' addresses and ranges. The HTTP, Fetch, Hono, Koa,
   * gRPC and Nest adapters pass it for every request. A key is never read as an address: without this, no
   * address or range entry holds for the call. A SluiceRangeError when it is no IPv4 or IPv6 address.
   */
  address?: string | undefined;
}

/** The names of TryAcquireOptions. */
export const TRY_ACQUIRE_OPTIONS: OptionNames<TryAcquireOptions> = {
  plan: true,
  permits: true,
  maxWaitMs: true,
  signal: true,
  address: true,
};

/** Options of `limiter.acquire`, which waits until the permits are granted (or the signal aborts). */
export interface AcquireOptions extends PlanOption {
  /** What the call counts (see TryAcquireOptions.permits). @default 1 */
  permits?: number | RulePermits | undefined;
  /** Aborting rejects the waiting call with SluiceError('ABORTED'). */
  signal?: AbortSignal | undefined;
  /** The client's IP address, for the access lists (see TryAcquireOptions.address). */
  address?: string | undefined;
}

/** The names of AcquireOptions. */
export const ACQUIRE_OPTIONS: OptionNames<AcquireOptions> = { plan: true, permits: true, signal: true, address: true };

/** Options of `peek`. */
export interface PeekOptions extends PlanOption {
  /** The client's IP address, for the access lists (see TryAcquireOptions.address). */
  address?: string | undefined;
}

/** The names of PeekOptions. */
export const PEEK_OPTIONS: OptionNames<PeekOptions> = { plan: true, address: true };

/** Options of `penalize`. */
export type PenalizeOptions = PlanOption;

/** The names of PenalizeOptions. */
export const PENALIZE_OPTIONS: OptionNames<PenalizeOptions> = { plan: true };

/** Options of `limiter.refund`: which grant is given back, and how long ago it was made. */
export interface RefundOptions extends PlanOption {
  /**
   * How long ago the grant being refunded was asked for, on `limiter.clock` (measure from before the
   * `tryAcquire` call: `limiter.clock.now() - askedAt`). A window rule then gives back only while the window
   * the grant was counted in lasts, so no window passes more than its limit. Left out, window rules give
   * back from their newest grants.
   */
  grantedMsAgo?: number | undefined;
  /**
   * The decision whose grant is given back: the refund goes where that grant was counted. A grant a fail
   * mode made while Redis was away (`decision.source === 'fallback'`) is given back to the fail mode's own
   * state ('local') or nowhere ('open' counted it nowhere), never to Redis, which never counted it; a grant
   * Redis made is never given to the fail mode. A denial, or a shadowed grant, took nothing: nothing is
   * given back. Its plan is the refund's when `plan` is not given. Left out, the refund goes wherever the
   * store decides now (Redis, or the fail mode while Redis is away): pass it whenever you have it.
   */
  decision?: Decision | undefined;
}

/** The names of RefundOptions. */
export const REFUND_OPTIONS: OptionNames<RefundOptions> = { plan: true, grantedMsAgo: true, decision: true };

/** Options of `reconfigure`. */
export interface ReconfigureOptions {
  /**
   * What happens to what keys already spent under the rules being changed (see CarryMode): keep what was
   * used, keep the fraction used, or start fresh. Rules with new names always start fresh.
   * @default 'used'
   */
  carry?: CarryMode | undefined;
}

/** The names of ReconfigureOptions. */
export const RECONFIGURE_OPTIONS: OptionNames<ReconfigureOptions> = { carry: true };

/** One key's own rules (limiter.override). */
export interface Override {
  readonly key: string;
  readonly rules: readonly Algorithm[];
}

/** Options of `overrides`: a page of the list, in key order. */
export interface OverridesOptions {
  /** Where the page starts: the `cursor` of the page before (undefined: the first page). */
  cursor?: string | undefined;
  /**
   * The most overrides on the page, 1 to 1,000.
   * @default 100
   */
  count?: number | undefined;
}

/** The names of OverridesOptions. */
export const OVERRIDES_OPTIONS: OptionNames<OverridesOptions> = { cursor: true, count: true };

/** A page of `overrides`. */
export interface OverridesPage {
  readonly overrides: readonly Override[];
  /** The next page's cursor; undefined on the last page. */
  readonly cursor: string | undefined;
}

/** A rate limiter bound to a store: the same interface for local, exact (Redis), leased and divided modes. */
export interface Limiter {
  /** Decides `permits` for `key`, waiting at most `maxWaitMs`. Resolves to the Decision; never rejects for being limited. */
  tryAcquire(key: string, options?: TryAcquireOptions): Promise<Decision>;
  /**
   * Waits until `permits` are granted; resolves to the ms waited. Rejects only on abort, close or a request that
   * can never fit (over a rule's limit; a fail mode's share below it while Redis is away is waited out, asking
   * again every FALLBACK_RETRY_MS).
   */
  acquire(key: string, options?: AcquireOptions): Promise<number>;
  /** Reports the key's standing (for one permit) without consuming. */
  peek(key: string, options?: PeekOptions): Promise<Decision>;
  /** Forgets the key under every rule (of every plan) and lifts its ban: its next request starts from a fresh state. */
  reset(key: string): Promise<void>;
  /**
   * Gives back up to `permits` to each of the key's own rules (a rule shared with other keys keeps what it
   * took), never beyond a fresh state: a request that should not count after all (it failed, it was cheap).
   * Atomic per key on Redis. `permits` is an integer >= 0. Rejects with SluiceError('UNSUPPORTED') for a rule
   * that cannot refund (Guava's prepay) or a store without refunds.
   *
   * @example
   * const askedAt = limiter.clock.now()
   * const d = await limiter.tryAcquire(key)
   * if (d.allowed && !(await handle())) await limiter.refund(key, 1, { grantedMsAgo: limiter.clock.now() - askedAt })
   */
  refund(key: string, permits: number | RulePermits, options?: RefundOptions): Promise<void>;
  /**
   * Takes `permits` from every rule the key is counted against, even past the limit: the key is then denied
   * until it drains (a response's real cost, known only after it: LLM tokens, bytes). Atomic per key on Redis.
   * `permits` is an integer >= 0.
   *
   * @example
   * await tokens.penalize(`tenant:${id}`, usage.totalTokens - estimate)
   */
  penalize(key: string, permits: number | RulePermits, options?: PenalizeOptions): Promise<void>;
  /**
   * Blocks `key` for `ms` from now (a deny list): every request meanwhile is denied with `blocked: true`.
   * A ban in force that ends later is kept. `ms` is a finite number > 0.
   *
   * @example
   * await login.block(`${user}|${ip}`, 24 * 3_600_000)
   */
  block(key: string, ms: number): Promise<void>;
  /** Lifts the key's ban, explicit or started by a rule's `blockMs`. */
  unblock(key: string): Promise<void>;
  /**
   * Resolves once the store's start-up check passed (a Redis-backed store checks, on the limiter's keys, the
   * commands its scripts run; see RedisStore.ready); at once for a store with nothing to check (memory).
   * Rejects with SluiceError 'STORE_MISCONFIGURED' naming what is wrong, or 'STORE_UNAVAILABLE' when the
   * store did not answer. Decisions never wait for it.
   *
   * @example
   * const limiter = createLimiter({ rules, store: redisStore({ redis }) })
   * await limiter.ready() // at start-up: fail fast on a bad ACL or the wrong client
   */
  ready(): Promise<void>;
  /** Stops the limiter: waiting calls reject with SluiceError('CLOSED'); a store it created is closed. */
  close(): Promise<void>;
  /**
   * Changes the limiter's rules while it runs: a rule keeps its identity (and what keys used under it) by
   * name, a rule with a new name starts fresh, a rule left out is dropped; `options.carry` says what happens
   * to what was used (default 'used': 60 used of an old limit of 100 leaves 0 of a new 50 and 140 of a new
   * 200). A key's states are carried over the first time the key is met under the new rules; decisions then
   * report `configVersion`. A rule may not change its kind under the same name (give it a new name).
   * Resolves to the configuration now in force. On a memory store the change is this limiter's; stores that
   * cannot carry states over refuse with SluiceError('UNSUPPORTED'), as do limiters with plans.
   *
   * @example
   * await api.reconfigure(tokenBucket({ name: 'api', capacity: 200, refillPerSecond: 20 }))
   */
  reconfigure(rules: Rules, options?: ReconfigureOptions): Promise<LimiterConfiguration>;
  /**
   * Gives one key its own rules (a contract, a partner, an abuser) in place of the limiter's: what the key
   * used is kept by rule name, as `reconfigure` keeps it. Setting it again replaces it; decisions it makes
   * say `override: true`. The rules are the key's own: a rule counted against another key (`key` option) is
   * refused, as are overrides on a limiter with such rules. A limiter with plans takes none, on every store
   * (a key's own rules are then a plan of its own); stores that cannot carry states over refuse too, with
   * SluiceError('UNSUPPORTED').
   *
   * @example
   * await api.override('tenant:acme', tokenBucket({ name: 'api', capacity: 5_000, refillPerSecond: 50 }))
   */
  override(key: string, rules: Rules): Promise<void>;
  /** Takes a key's override away: it returns to the limiter's rules, keeping what it used. No override: nothing. */
  removeOverride(key: string): Promise<void>;
  /** The overrides in force, a page at a time in key order. */
  overrides(options?: OverridesOptions): Promise<OverridesPage>;
  /** The rules in force (of the first plan, for a limiter with plans). */
  readonly rules: readonly Algorithm[];
  /**
   * The version of the limiter's configuration: 1 until the first `reconfigure`, then larger after each (on
   * the memory store one more; on Redis the server's time in ms of the change, or one more when that is later,
   * so a number never names two configurations, even after Redis lost them).
   */
  readonly configVersion: number;
  /**
   * The clock this limiter waits on: its store's when the store decides on this process's clock (a memory
   * store, a ManualClock in tests), else systemClock. Durations measured on it (a refund's `grantedMsAgo`)
   * are the store's.
   */
  readonly clock: Clock;
  /** For a limiter with plans: each plan's rules, under the names they keep state by. */
  readonly plans: Readonly<Record<string, readonly Algorithm[]>> | undefined;
  readonly prefix: string;
  /**
   * The `n` keys denied most (then granted most near their limit) over the last `minutes` minutes (5 unless
   * given, at most 15; this one included), most first: on a shared store the fleet's, every node's counts
   * summed on the store's board (each node adds its own every `limitedKeys.flushMs`), with this process's
   * not yet added. In clear with `limitedKeys.clearKeys`, else as keyed hashes (`keyHash`). Counts as
   * Space-Saving sketches count them (each within `error`).
   */
  topLimited(n?: number, options?: TopLimitedOptions): Promise<LimitedKey[]>;
  /**
   * Adds this process's limited-keys counts to the store's board now (they go every `limitedKeys.flushMs` by
   * themselves, and at close): for a test, or before asking another node. Rejects with the store's error.
   */
  flushLimitedKeys(): Promise<void>;
  /**
   * Puts `entries` on the allow list, for every node of the limiter's store: a key, or an IP address or
   * IPv4/IPv6 CIDR range (matched against the call's `address`, never the key), whose requests skip the rules
   * (allowed, nothing consumed, `decision.access` says which entry), unless the key is banned: a ban holds.
   * An entry already on a list moves here. At most 10,000 per call, 100,000 in all (SluiceRangeError past
   * them, nothing added); text shaped as an address that cannot be enforced as written is refused
   * (SluiceRangeError naming it). On a Redis store every node holds it within a second.
   */
  allow(entries: string | readonly string[], options?: ListEntryOptions): Promise<void>;
  /**
   * Puts `entries` on the deny list (see allow): their requests are denied before the rules (`retryAfterMs`
   * until the entry expires, Infinity when it does not; `decision.access.reason` says why).
   */
  deny(entries: string | readonly string[], options?: ListEntryOptions): Promise<void>;
  /** Takes `entries` off the lists, for every node; how many were there. */
  unlist(entries: string | readonly string[]): Promise<number>;
  /** Every entry of the allow and deny lists in force (expired ones left out), as the store holds them. */
  accessList(): Promise<AccessEntry[]>;
  /** The keyed hash `topLimited` shows for `key` (to find a key you know among the hashes). */
  keyHash(key: string): Promise<string>;
  /**
   * Where the limiter's state lives (the store it was given, or the memory store it made for itself): what
   * builds on a limiter (a throttle's queue and pauses) meets the other processes there.
   */
  readonly store: Store;
}
