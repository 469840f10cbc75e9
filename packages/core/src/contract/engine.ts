import type { Algorithm } from '../algorithms/algorithm.js';
import type { Decision } from '../foundation/decision.js';
import type { RuleVerdict } from '../engine/policy.js';
import type { Permits } from '../engine/store.js';
import type { CarryMode } from '../algorithms/carry.js';

/**
 * The engine contract: the only thing a central backend (Redis, PostgreSQL, one of your own) implements. Every
 * mode is written once over it: exact mode decides each request with `decide`; leased mode takes batches with
 * `lease` and hands them back with `adjust`; divided mode meets its fleet with `heartbeat` and draws its reserve
 * with `lease`; live limits keep a limiter's configuration with `readConfig`/`writeConfig` and tell the fleet
 * with `publish`/`subscribe`. docs/writing-an-engine.md says what each method must guarantee; the conformance
 * suite (`checkEngine` in `@sluice/core/engine`) checks an engine against core, bit for bit.
 *
 * Every method is atomic for what it names (one key's rules, one lease, one fleet's heartbeat, one record), and
 * rejects when the backend cannot answer (the modes' health machine and fail mode take it from there). An
 * engine never throws synchronously.
 */
export interface Engine {
  /** The engine's name in errors and events: `redis`, `postgres`, `memory`. */
  readonly name: string;
  /**
   * Decides each ask of `asks` for `rules`, in order, each atomically across its rules (all or nothing), and
   * answers each (a batch may travel as several calls: each ask is decided, or refused as stale, on its own).
   */
  decide(rules: EngineRules, asks: readonly EngineAsk[]): Promise<readonly DecideAnswer[]>;
  /** Changes one key's standing: a refund, a penalty, a reset, a ban or its end. */
  adjust(rules: EngineRules, key: string, adjustment: Adjustment, at: EngineTime): Promise<AdjustAnswer>;
  /** Debits up to `ask.want` permits of one rule for a node to spend locally, and counts it among the key's lessees. */
  lease(rules: EngineRules, ask: LeaseAsk, at: EngineTime): Promise<LeaseAnswer>;
  /**
   * One node's heartbeat in one fleet (a divided limiter's nodes): records it and answers its share. A node
   * asks its fleets' heartbeats together (before it awaits): an engine may carry them together (Redis: one
   * call per Cluster slot), as long as each is answered, or fails, on its own.
   */
  heartbeat(beat: Heartbeat, at: EngineTime): Promise<HeartbeatAnswer>;
  /** A limiter's configuration record, and the engine's time (a new version is at least it). */
  readConfig(prefix: string): Promise<ConfigRead>;
  /**
   * Stores `record` if the stored version is still `expected` (1: none stored); else says the version there.
   * A record written raises the prefix's version everywhere before the call answers, or, given `key` (a change
   * of that key's override alone), at least where the key's states live.
   */
  writeConfig(prefix: string, expected: number, record: ConfigRecord, key?: string): Promise<ConfigWrite>;
  /**
   * Tells every subscriber of `channel` `message`, on every node: at most once, never inside this call, and in
   * no promised order (a Redis Cluster relays each publish through whichever node took it).
   */
  publish(channel: string, message: string): Promise<void>;
  /**
   * Calls `listener` for each message published to `channel` from now on; resolves once messages are heard,
   * with the function that stops listening.
   */
  subscribe(channel: string, listener: (message: string) => void): Promise<() => Promise<void>>;
}

/**
 * Whose clock decides a call: undefined for the engine's own (one clock for the whole fleet), or a time in ms
 * on the caller's clock (tests with a ManualClock; `clock: 'client'`).
 */
export type EngineTime = number | undefined;

/** One limiter's rules, as an engine keeps their states. */
export interface EngineRules {
  /** The limiter's namespace: no state, ban, lessee, fleet or record of one prefix is another's. */
  readonly prefix: string;
  /** The rules, each decided by its algorithm (the engine's twin of it, bit for bit core's). */
  readonly rules: readonly Algorithm[];
  /**
   * Each rule's state name, in rule order: the state a rule reads and writes for an identity is
   * (prefix, state name, identityOf(rule, key)). Two rules of one name but another state format (stateName)
   * never share a state; a configuration kept apart (a later generation, an override) has names of its own.
   */
  readonly states: readonly string[];
  /**
   * The configuration version the caller decides under (live limits), or undefined when it keeps none. The
   * engine keeps the highest version named: a call under an older one changes nothing and answers
   * `{ stale: newer }`. A record written (writeConfig) makes its version the prefix's everywhere; a call under
   * a newer version raises it at least where that call's states live (an engine may keep versions per
   * partition, as Redis does per Cluster slot).
   */
  readonly version?: number | undefined;
}

/** One request of a decide batch. */
export interface EngineAsk {
  /** The request's key; each rule counts its identity for it (identityOf), the ban is the key's own. */
  readonly key: string;
  readonly permits: Permits;
  /** A reserving rule (smoothBursty, leakyBucket as a shaper) may grant with a wait up to this; else 0. */
  readonly maxWaitMs: number;
  /** Report the standing without consuming (limiter.peek). */
  readonly peek: boolean;
  /** When it was asked (see EngineTime): asks of one batch were asked at their own times. */
  readonly at: EngineTime;
}

/** An engine's answer to one ask. */
export interface EngineDecision {
  /** As core decides it: a policy's merged by mergePolicy, a blocked key's by blockedDecision. */
  readonly decision: Decision;
  /** The time the engine decided at (its own clock, or the caller's `at`). */
  readonly decidedAtMs: number;
  /** Each rule's own verdict, in rule order. */
  readonly verdicts: readonly RuleVerdict[];
  /** When the key is banned: the banning rule's index (-1: `block`) and the rest of the ban, in ms. */
  readonly ban: { readonly rule: number; readonly restMs: number } | undefined;
  /**
   * Each rule's decision time, in rule order (NaN: not reached), when the rules were decided at different
   * times (a policy whose states live in several partitions, decided one after another); `decidedAtMs` is the
   * latest. Absent when all were decided at `decidedAtMs`.
   */
  readonly ruleDecidedAtMs?: readonly number[] | undefined;
}

/** One ask's answer: its decision, or the newer configuration version that refused it (nothing taken). */
export type DecideAnswer = EngineDecision | Stale;

/** A call refused because the prefix's configuration is newer than the caller's (nothing changed). */
export interface Stale {
  readonly stale: number;
}

/** What `adjust` does to one key. */
export type Adjustment =
  /**
   * Gives back up to `permits` to each rule counted against the key itself, never beyond a fresh state; a
   * window rule only into the window the grant was counted in: the one `grantedMsAgo` before `at` (NaN:
   * unknown), or the one `grantedAtMs` falls in, a time on the clock that decided the grant (a lease's
   * `decidedAtMs`: a node handing a lease back does not know the engine's clock, only the lease's time on it).
   */
  | { readonly op: 'refund'; readonly permits: Permits; readonly grantedMsAgo: number; readonly grantedAtMs?: never }
  | { readonly op: 'refund'; readonly permits: Permits; readonly grantedAtMs: number; readonly grantedMsAgo?: never }
  /** Takes `permits` from every rule, past the limit if need be. */
  | { readonly op: 'penalize'; readonly permits: Permits }
  /**
   * Forgets the key under every rule counted against the key itself, its lessees under each (a lease after
   * it counts its node alone), and its ban.
   */
  | { readonly op: 'reset' }
  /** Bans the key for `ms` from `at` (an explicit ban; a ban in force that ends later is kept, and becomes explicit). */
  | { readonly op: 'block'; readonly ms: number }
  /** Lifts the key's ban, whoever set it. */
  | { readonly op: 'unblock' }
  /**
   * Carries the key's states kept under earlier rules to `rules` (live limits: a changed rule's states live
   * under a state name of its generation, and the first touch of a key after the change carries them): for
   * each of `links`, when the rule `rules.rules[link.rule]` holds no state of the key, the newest earlier
   * state found among `link.from` (newest first) is carried through each change since it (core's
   * carryState, by that change's mode), kept under the rule's state as a penalty of 0 keeps it, and every
   * earlier state of the link is deleted. A rule that holds a state keeps it (another node carried it, or
   * decided it fresh), and its earlier states stay. `freed` is false.
   */
  | { readonly op: 'carry'; readonly links: readonly CarryLinks[] };

/** One rule's earlier generations, as `adjust`'s carry reads them. */
export interface CarryLinks {
  /** The rule carried to: an index into `rules.rules` (each rule at most once). */
  readonly rule: number;
  /**
   * Its earlier generations, newest first: each generation's rule, its state name, and the mode of the change
   * from it to the next generation (the next one in this list, or the rule carried to for the first).
   */
  readonly from: readonly { readonly rule: Algorithm; readonly state: string; readonly mode: CarryMode }[];
}

/**
 * What an adjustment changed: `freed` is true when a refund gave back to a rule that was denying the key
 * (other nodes may hold a denial or a spent lease of it: the caller announces it), or a reset or unblock
 * found something to forget.
 */
export type AdjustAnswer = { readonly freed: boolean } | Stale;

/** One lease: a node takes permits of one rule (`rules` holds exactly one) for one key. */
export interface LeaseAsk {
  readonly key: string;
  /** Permits to take, at most (>= 1). */
  readonly want: number;
  /** The node leasing: it is counted among the key's lessees until `liveMs` after this lease. */
  readonly node: string;
  readonly liveMs: number;
  /**
   * A lease takes at most the rule's burst / (hoardingDivisor x live lessees), at least 1; undefined: no cap.
   * Keeps one node from taking what the fleet needs.
   */
  readonly hoardingDivisor: number | undefined;
  /**
   * Count the node among the lessees (and forget the dead) on this call; false when it did within the last
   * third of `liveMs`, so the engine only counts them (an engine may always register).
   */
  readonly register: boolean;
}

/** What a lease took. */
export type LeaseAnswer =
  | {
      readonly granted: number;
      /** Until `want` permits could be leased (0: now). */
      readonly retryMs: number;
      readonly decidedAtMs: number;
      /** Live lessees of the key, this node included. */
      readonly lessees: number;
      /** Whole permits the central state has left after this lease. */
      readonly centralRemaining: number;
      /** Whether the node was (re)counted among the lessees by this call. */
      readonly registered: boolean;
    }
  | Stale;

/** One node's heartbeat in one fleet: the nodes of one divided limiter's rule (its prefix and fleet name). */
export interface Heartbeat {
  readonly prefix: string;
  /** The fleet's name within the prefix (divided mode: the divided rule's name, kept across reconfigure). */
  readonly fleet: string;
  readonly node: string;
  /** True when the node leaves (its limiter closed): it is forgotten and its share divided at the next division. */
  readonly leaving: boolean;
  /** A node counts as live this long after its last heartbeat (three heartbeats). */
  readonly liveMs: number;
  /** The division is made again at most once per interval, by the first heartbeat after it ends. */
  readonly intervalMs: number;
  /** The limit divided, in permits per second, and the rule's burst in permits. */
  readonly limit: number;
  readonly burst: number;
  /** This node's recent demand, in permits per second. */
  readonly demand: number;
  /** 'equal': limit / N; 'demand': max-min fair over the nodes' demands (divideShares). */
  readonly division: 'equal' | 'demand';
  /** The part of the limit the shares divide (1 - the reserve); 1: no reserve. */
  readonly divided: number;
  /** True for a window rule: its reserve also takes what rounding shares to whole permits leaves. */
  readonly windowed: boolean;
  /** The fewest whole permits of the burst a node holds locally (a smaller share is left to the reserve). */
  readonly minLocal: number;
  /** What the node's last answered heartbeat wrote (`HeartbeatAnswer.at`), or undefined. */
  readonly lastAt: number | undefined;
  /** The fleet's size as this node last heard it (0: never), and the size it assumes before it hears one. */
  readonly knownNodes: number;
  readonly assumedNodes: number;
  /** The configuration version the node decides under (live limits). */
  readonly version: number;
}

/** A heartbeat's answer: this node's allocation (never the membership: constant size whatever the fleet's). */
export interface HeartbeatAnswer {
  /** The time recorded for this heartbeat (`Heartbeat.lastAt` next time). */
  readonly at: number;
  /** The engine's clock now, in ms (a node compares its own with it). */
  readonly engineNowMs: number;
  /** Live nodes. */
  readonly nodes: number;
  /** This node's allocation in the current and the previous division, as fractions of the limit (undefined: none). */
  readonly current: number | undefined;
  readonly previous: number | undefined;
  /** True when this heartbeat founded the fleet (no node held any of the limit before). */
  readonly founded: boolean;
  /** The reserve's fraction of the limit in the current division (undefined: no reserve). */
  readonly reserve: number | undefined;
  /** True when `node` is another live process's id: nothing was recorded; the node joins again under its own. */
  readonly idTaken: boolean;
  /** The prefix's configuration version (a node behind it reads the configuration). */
  readonly version: number;
}

/** A limiter's configuration as an engine stores it: a version and an opaque text (JSON, written by core). */
export interface ConfigRecord {
  readonly version: number;
  readonly text: string;
}

/** `readConfig`'s answer: the record stored (undefined: none) and the engine's time, in whole ms. */
export interface ConfigRead {
  readonly record: ConfigRecord | undefined;
  readonly engineNowMs: number;
}

/** `writeConfig`'s answer: written, or the version stored instead of the one expected (nothing written). */
export type ConfigWrite = { readonly written: true } | { readonly written: false; readonly conflict: number };

/**
 * True for an answer refused because the caller's configuration is stale.
 * @example
 * const [answer] = await engine.decide(rules, [{ key: 'k', permits: 1, maxWaitMs: 0, peek: false, at: undefined }])
 * if (answer !== undefined && isStale(answer)) await live.refresh(answer.stale)
 */
export function isStale(answer: object): answer is Stale {
  return typeof (answer as Partial<Stale>).stale === 'number';
}
