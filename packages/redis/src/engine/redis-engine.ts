import type { Engine, EngineRules } from '@sluice/core/engine';
import { checkedEngine, OPERATIONS_DEADLINE_MS, withDeadline } from '@sluice/core/internal';
import type { ChannelListener } from '../connection/channel-listener.js';
import type { RedisConnection } from '../connection/connection.js';
import { adjustOnRedis } from './engine-adjust.js';
import { EngineChannels } from './engine-channels.js';
import { EngineConfiguration } from './engine-config.js';
import { type DecideBatching, EngineDecider } from './engine-decide.js';
import { HeartbeatBatcher, leaseOnRedis } from './engine-fleet.js';
import { checkNode, checkPrefix, checkStates } from './engine-input.js';

/** True when two lists of state names are the same names in the same order. */
function sameNames(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** What a store gives the engine on its connection besides the deadline (see engineOnConnection). */
export interface ConnectionEngineOptions extends DecideBatching {
  /** The store's subscriber, which messages are heard on (undefined: the engine makes one when asked to listen). */
  readonly channels?: ChannelListener | undefined;
}

/**
 * The engine on a connection a store already holds (the hybrid stores': one connection, one set of function
 * libraries). `timeoutMs` undefined: adjust, lease and heartbeat calls wait for Redis as long as it takes,
 * because the mode keeps the deadline (a lease answered after its caller gave up is still credited to the
 * node's lease; an engine that rejected it would lose permits the central state has debited); decide,
 * records and messages then wait OPERATIONS_DEADLINE_MS at most (exact mode keeps its own, shorter, decision
 * deadline: a decision answered past it is still known to have been counted). `extras`: redisStore's
 * maxBatch and client-clock skew bound, and the store's own subscriber for messages.
 * @example
 * const engine = engineOnConnection(parts.connection, undefined) // leased mode: its own deadlines
 */
export function engineOnConnection(
  connection: RedisConnection,
  timeoutMs: number | undefined,
  extras: ConnectionEngineOptions = {},
): Engine {
  const bounded = <T>(call: Promise<T>, what: string): Promise<T> =>
    timeoutMs === undefined ? call : withDeadline(call, timeoutMs, what);
  const operationsMs = timeoutMs ?? OPERATIONS_DEADLINE_MS;
  const decider = new EngineDecider(connection, operationsMs, extras);
  const configuration = new EngineConfiguration(connection, operationsMs);
  const channels = new EngineChannels(connection, operationsMs, extras.channels);
  const heartbeats = new HeartbeatBatcher(connection);
  /** Rules objects whose prefix and state names were checked, and what they were. */
  const keyed = new WeakMap<EngineRules, { readonly prefix: string; readonly states: readonly string[] }>();
  // The contract's checks are core's (checkedEngine); here only what Redis keys can hold.
  return checkedEngine({
    name: 'redis',
    // Not async: a check's throw becomes a rejection in checkedEngine, and exact mode's path is one promise
    // shorter per decision.
    decide(rules, asks) {
      // Checked once per rules object while its prefix and states stay (exact mode asks one decision per call).
      const seen = keyed.get(rules);
      if (seen === undefined || seen.prefix !== rules.prefix || !sameNames(seen.states, rules.states)) {
        checkPrefix('rules.prefix', rules.prefix);
        checkStates('rules.states', rules.states);
        keyed.set(rules, { prefix: rules.prefix, states: [...rules.states] });
      }
      return decider.decide(rules, asks);
    },
    async adjust(rules, key, adjustment, at) {
      checkPrefix('rules.prefix', rules.prefix);
      checkStates('rules.states', rules.states);
      return bounded(adjustOnRedis(connection, rules, key, adjustment, at), `${adjustment.op}`);
    },
    async lease(rules, ask, at) {
      checkPrefix('rules.prefix', rules.prefix);
      checkStates('rules.states', rules.states);
      checkNode('ask.node', ask.node);
      return bounded(leaseOnRedis(connection, rules, ask, at), 'a lease');
    },
    async heartbeat(beat, at) {
      checkPrefix('beat.prefix', beat.prefix);
      checkPrefix('beat.fleet', beat.fleet);
      checkNode('beat.node', beat.node);
      return bounded(heartbeats.beat(beat, at), 'a heartbeat');
    },
    async readConfig(prefix) {
      checkPrefix('prefix', prefix);
      return configuration.read(prefix);
    },
    async writeConfig(prefix, expected, record, key) {
      checkPrefix('prefix', prefix);
      return configuration.write(prefix, expected, record, key);
    },
    publish: (channel, message) => channels.publish(channel, message),
    subscribe: (channel, listener) => channels.subscribe(channel, listener),
  });
}
