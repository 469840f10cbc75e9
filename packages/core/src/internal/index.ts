/**
 * `@sluice/core/internal`: what sluice's own packages share (@sluice/redis, @sluice/hybrid, @sluice/nestjs,
 * @sluice/grpc, the CLI): not public API, no semver, changed without notice. Nothing here is needed to use a
 * limiter, and an engine of your own needs only `@sluice/core/engine` (docs/writing-an-engine.md).
 *
 * @example
 * import { PrefixGuard, decidePolicy, identityOf } from '@sluice/core/internal'
 */

import { EngineState, ExpiringMap, compositeKey } from '../contract/memory-engine-state.js';
import { adjustKey, decideAsk, stateKeys } from '../contract/memory-decide.js';
import { leaseOf } from '../contract/memory-lease.js';
import { heartbeatOf } from '../contract/memory-fleet.js';

/** Policies: the rules of a limiter, one decision over several rules, and the one merge of their verdicts. */
export { decidePolicy, mergePolicy } from '../engine/policy.js';
export type { PolicyOutcome, RuleVerdict } from '../engine/policy.js';
/** Bans: the one answer for a blocked key, and which ban a denial starts. */
export { EXPLICIT_BAN, banAfter, blockedDecision, longerBan } from '../engine/ban.js';
export type { Ban } from '../engine/ban.js';
/** The identity a rule counts a request against (its `key` option), and the name its state is kept under. */
export { identityOf, stateName } from '../algorithms/rule-name.js';
/** A rule as data and back: what a store keeping a limiter's rules for every node writes (limiter.reconfigure). */
export { ruleFromSpec, ruleSpec } from '../algorithms/rule-spec.js';
export type { RuleSpec } from '../algorithms/rule-spec.js';
/** How long a changed rule's states are carried to the new rules on first touch (limiter.reconfigure). */
export { carryWindowMs } from '../algorithms/carry.js';
/** The count a call asks of one rule (one count for every rule, or each rule's own by name). */
export { lessPermits, mostPermits, permitsOfRule, uniformPermits } from '../engine/store.js';
/** A new generation of a binding that carries each key's states from the one before on first touch. */
export { CarriedBinding, hasStateAccess } from '../engine/carried-binding.js';
export type { CarrySource } from '../engine/carried-binding.js';
/** A count scaled to a share of a fleet's limit: rounded down, but at least 1. */
export { shareOf } from '../algorithms/algorithm.js';
/** Refuses a second limiter with other rules on a prefix of one store. */
export { checkedEngine } from '../contract/checked-engine.js';
/** How a divided limit is split among a fleet's nodes (membership.lua's twin; divided mode reads it). */
export { divideShares } from '../contract/divide-shares.js';
export type { NodeDemand, ShareMode } from '../contract/divide-shares.js';
export { PrefixGuard } from '../engine/prefix-guard.js';
/** A rule held at this node's share of a fleet's limit, following the share as it changes. */
export { sharedRule } from '../algorithms/shared-rule.js';
export type { FleetShare } from '../algorithms/shared-rule.js';
/** An LRU of at most N keys whose memory grows with use. */
export { keyCache } from '../engine/key-cache.js';
/** User callbacks isolated from a store's bookkeeping, and where their errors go. */
export { callSafely, emitSafely } from '../foundation/callbacks.js';
/** Errors that name the public function called (`fixedWindow: limit must be ...`). */
export { inCall } from '../foundation/errors.js';
/** Coded configuration warnings, once per code per process. */
export { warnOnce } from '../foundation/warnings.js';
export type { CallbackEmitter } from '../foundation/callbacks.js';
/** What observers see: a store's standing (degraded, a divided share) and the permits a node leased. */
export { registerStatus, reportLease } from '../engine/observe.js';
export type { DecisionNote, DecisionSource, StatusSource } from '../engine/observe.js';
/** Host-timer sleeps of any length, and the Clock option's check. */
export { clockValue, timerSleep } from '../foundation/clock.js';
/** Option validators: typed errors that name the option and the bad value. */
export {
  describe as describeValue,
  positiveFinite,
  positiveInteger,
  timerDuration,
} from '../foundation/validate.js';
/** Option schemas: each option's check and default, declared against its options type, parsed in one step. */
export {
  booleanValue,
  functionValue,
  knownOptions,
  oneOf,
  option,
  optional,
  parseOptions,
  required,
} from '../foundation/options.js';
export type {
  DefaultedOption,
  OptionNames,
  OptionSchema,
  OptionSpec,
  ParsedOptions,
  RequiredOption,
  SchemaOf,
} from '../foundation/options.js';
/** Operations: the limited-keys hash and the access lists' entry checks, as tools outside a limiter need them (the CLI). */
export { keyHash } from '../engine/limited-keys.js';
export { entriesInForce, entryTexts, listEntries } from '../engine/access-list.js';

/**
 * What every mode over an engine is built from (exact, leased, divided; Redis today, any engine tomorrow): the
 * deadline every call keeps, the one health machine, the one fail mode, the deny cache, a node's id in its
 * fleets, the events every engine-backed store emits alike, and the options they share.
 */
export {
  DEFAULT_TIMEOUT_MS,
  DeadlineError,
  OPERATIONS_DEADLINE_MS,
  deadlineCounts,
  withDeadline,
} from '../modes/deadline.js';
export { EngineHealth, MAX_PROBE_INTERVAL_MS } from '../modes/health.js';
export type { EngineLink, HealthOptions, HealthProbe } from '../modes/health.js';
export { DEFAULT_FAIL_MODE, Fallback, MAX_CHARGED_KEYS } from '../modes/fail-mode.js';
export type { FailMode, FallbackBinding, FallbackOptions } from '../modes/fail-mode.js';
/** How long any mode answers a denial it cached before asking the engine again (a missed message heals). */
export { DENY_CACHE_TRUST_MS, DenyCache } from '../modes/deny-cache.js';
export { ExactBinding } from '../modes/exact/exact-binding.js';
/** Exact mode as a store assembles it over an engine: per prefix its bindings, deny caches and channel. */
export { ExactStore } from '../modes/exact/exact-store.js';
export type { ExactStoreParts, PrefixExtras } from '../modes/exact/exact-store.js';
/** A key in an engine's names and messages (a reset message on a limiter's channel), one encoding everywhere. */
export { decodeIdentity, encodeIdentity } from '../modes/key-message.js';
export { engineKind } from '../modes/exact/exact-parts.js';
export { ENGINE_HOST, hostMakerOf, withHostMaker } from '../modes/engine-host.js';
export { hostParts } from '../modes/host-parts.js';
export type { HostParts, HostSettings } from '../modes/host-parts.js';
export type {
  EngineHost,
  EngineHostMaker,
  EngineUse,
  FleetPresence,
  LimiterTables,
  PresenceOptions,
  StartupCheck,
} from '../modes/engine-host.js';
export type { BanHint, DenialSharing, EngineSource, ExactParts } from '../modes/exact/exact-parts.js';
export { NodeIdentity } from '../modes/node-identity.js';
export { StaleConfigurationError, staleVersionOf } from '../modes/stale.js';
export type {
  DecisionEvent,
  FallbackChargedEvent,
  FleetEvent,
  ReconfiguredEvent,
  ListenerMethod,
  ResetHeardEvent,
  StoreEmitterOf,
  StoreEvents,
  StoreListeners,
} from '../modes/store-events.js';
export {
  DEFAULT_ASSUMED_NODES,
  DEFAULT_HEARTBEAT_MS,
  ENGINE_BACKED_OPTIONS,
  FAIL_MODE_OPTIONS,
  storeClocks,
} from '../modes/engine-options.js';
export type { ClockOption, EngineBackedOptions, FailModeOptions, StoreClocks } from '../modes/engine-options.js';
/**
 * The HTTP adapters' shared machinery, as @sluice/nestjs and @sluice/grpc build their adapters on it: the one
 * options parser and evaluator, the answers to a verdict, the view of a node-style request, the request
 * context, the after-response settling and the JSON body of a 429.
 */
export { answerVerdict, createEvaluator, isInputError } from '../adapters/http/evaluate.js';
export type { Verdict } from '../adapters/http/evaluate.js';
export { runInRequestContext } from '../adapters/http/context.js';
export { settleOnNodeResponse } from '../adapters/http/response-end.js';
export { nodeRequestView } from '../adapters/http/view.js';
export { RATE_LIMIT_OPTIONS, limitedBody, limitedResponseOption } from '../adapters/http/options.js';
export type { RejectedBody } from '../adapters/http/options.js';
/**
 * Store authors' part of the stores' contracts, and the bounds and tolerances @sluice/redis and the CLI
 * share with the memory store (each restates a documented default or limit; none is public).
 */
export type { ConcurrencyStore, SemaphoreBinding, SemaphoreSpec, SlotAttempt } from '../engine/semaphore-store.js';
export type { PauseBinding, PauseStore } from '../engine/pause-store.js';
export { MAX_BOARD_MINUTES, byMostLimited, sumRows } from '../engine/limited-keys-board.js';
export type { BoardRow } from '../engine/limited-keys-board.js';
export { MAX_ACCESS_ENTRIES } from '../engine/access-list-store.js';
export type { NewAccessEntry, StoredAccessList } from '../engine/access-list-store.js';
export { TOLERANCE_MS } from '../algorithms/algorithm.js';
export { CARRY_MODES } from '../algorithms/carry.js';
export { DEFAULT_MAX_KEYS } from '../engine/memory-store.js';
export { DEFAULT_MAX_KEY_LENGTH } from '../foundation/validate.js';
/** What a store is made of, as the modes implement it (users pass a store; engine authors implement the Engine). */
export type { BoundStore, GrantSource, RuleSet, SharedRules, StoreCapabilities } from '../engine/store.js';
export type { LeaseWindow } from '../algorithms/algorithm.js';
export type { LimitedKeysBinding, LimitedKeysStore } from '../engine/limited-keys-board.js';
export type { AccessListBinding, AccessListStore } from '../engine/access-list-store.js';
/** Live limits' configuration, kept by any engine for every node of a limiter (limiter.reconfigure, overrides). */
export {
  MAX_OVERRIDES,
  decodeConfig,
  encodeConfig,
  firstConfig,
  generationName,
  overridden,
  reconfigured,
  rulesOf,
  withoutOverride,
} from '../modes/live/config-record.js';
export type { CarryLink, LiveConfig, LiveRule } from '../modes/live/config-record.js';
export { StoredConfiguration, storeUnavailable } from '../modes/live/stored-config.js';
export type { StoredConfigurationParts } from '../modes/live/stored-config.js';
/** Live limits for a mode over an engine: its rules' bindings per configuration version, and the first-touch carry. */
export { LiveBinding } from '../modes/live/live-binding.js';
export type { LiveParts, VersionBinding, VersionRules } from '../modes/live/live-binding.js';
export { KeyCarrier } from '../modes/live/key-carrier.js';
export type { KeyCarrierParts } from '../modes/live/key-carrier.js';
export { CLOCK_SKEW_WARN_MS, checkClockSkew, clockOffset, engineClockName, serverName } from '../modes/clock-skew.js';
/**
 * The memory engine's data and its pure calls, for an engine that runs core's algorithms inside a transaction
 * (@sluice/postgres): it loads the rows one call touches into an EngineState (its clock the backend's time, its
 * maps ExpiringMaps), runs decideAsk, adjustKey, leaseOf or heartbeatOf on it, and writes back what changed, so
 * its answers are memoryEngine's bit for bit. One object: these are memoryEngine's own parts, not an API.
 * @example
 * const data = new memoryEngineParts.EngineState({ now: () => databaseNowMs })
 * const answer = memoryEngineParts.decideAsk(data, rules, ask, ask.at ?? databaseNowMs)
 */
export const memoryEngineParts = {
  /** The memory engine's data: states, bans, lessees, fleets (ExpiringMaps on its clock), versions, records. */
  EngineState,
  /** A map whose entries expire on the engine's clock. */
  ExpiringMap,
  /** One map key of parts that may hold any character. */
  compositeKey,
  /** Each rule's state key for a request's key, in rule order. */
  stateKeys,
  /** Decides one ask at a time (memoryEngine's decide, per ask). */
  decideAsk,
  /** Adjusts one key at a time; true when it freed something. */
  adjustKey,
  /** Leases up to `want` permits of a rule at a time. */
  leaseOf,
  /** One node's heartbeat in its fleet at a time. */
  heartbeatOf,
} as const;
export type { Fleet } from '../contract/memory-fleet.js';
