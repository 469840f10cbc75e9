import type { Engine } from '@sluice/core/engine';
import { checkedEngine, inCall, OPERATIONS_DEADLINE_MS, withDeadline } from '@sluice/core/internal';
import type { ChannelListener } from '../connection/channel-listener.js';
import type { RedisConnection } from '../connection/connection.js';
import { adjustOnRedis } from './engine-adjust.js';
import { EngineChannels } from './engine-channels.js';
import { EngineConfiguration } from './engine-config.js';
import { type DecideBatching, EngineDecider } from './engine-decide.js';
import { HeartbeatBatcher, leaseOnRedis } from './engine-fleet.js';
import { checkNode, checkPrefix, checkStates } from './engine-input.js';
import { type RedisEngineOptions, parseEngineOptions } from './engine-options.js';

/**
 * The engine contract (`@sluice/core/engine`) on Redis, standalone or Cluster: exact mode's scripts, keys and
 * channels, so a state written through the engine is the state redisStore reads for the same prefix, state
 * name and identity, and the reverse. Each call is checked before anything is sent (a bad one rejects with
 * SluiceTypeError or SluiceRangeError and consumes nothing), waits for Redis at most `timeoutMs` (a
 * configuration write's raise of every Cluster slot waits as limiter.reconfigure's does), and rejects when Redis
 * does not answer: the engine has no fail mode, the modes keep theirs. Channels: an engine channel `c` is the
 * Redis channel `c:sluice-reset` (resetChannel), so a limiter's prefix names its reset and configuration
 * messages. A heartbeat's fleet is divided mode's membership keys of its prefix and fleet name. On a Cluster, a
 * policy whose rules count other identities than the request's key spans slots: it is decided slot by slot,
 * what one slot took given back when another refuses (all or nothing, but a given-back state's timing may
 * move: checkEngine's `sharedIdentities: false`), and such asks are decided one after another.
 * @example
 * import { Redis } from 'ioredis'
 * const engine = redisEngine({ redis: new Redis() })
 * const [answer] = await engine.decide({ prefix: 'api', rules: [rule], states: [stateName(rule)] },
 *   [{ key: 'user:1', permits: 1, maxWaitMs: 0, peek: false, at: undefined }])
 */
export function redisEngine(options: RedisEngineOptions): Engine {
  return inCall('redisEngine', () => {
    const { redis: connection, timeoutMs } = parseEngineOptions(options);
    return engineOnConnection(connection, timeoutMs);
  });
}

/**
 * The engine on a connection a store already holds (the hybrid stores': one connection, one set of function
 * libraries). `timeoutMs` undefined: adjust, lease and heartbeat calls wait for Redis as long as it takes,
 * because the mode keeps the deadline (a lease answered after its caller gave up is still credited to the
 * node's lease; an engine that rejected it would lose permits the central state has debited); decide,
 * records and messages then wait OPERATIONS_DEADLINE_MS at most (exact mode keeps its own, shorter, decision
 * deadline: a decision answered past it is still known to have been counted). `batching`: redisStore's
 * maxBatch and client-clock skew bound. `subscriber`: a store's subscriber the engine's channels are heard on
 * (one subscriber connection per store); undefined: the engine makes its own.
 * @example
 * const engine = engineOnConnection(parts.connection, undefined) // leased mode: its own deadlines
 */
export function engineOnConnection(
  connection: RedisConnection,
  timeoutMs: number | undefined,
  batching?: DecideBatching,
  subscriber?: ChannelListener,
): Engine {
  const bounded = <T>(call: Promise<T>, what: string): Promise<T> =>
    timeoutMs === undefined ? call : withDeadline(call, timeoutMs, what);
  const operationsMs = timeoutMs ?? OPERATIONS_DEADLINE_MS;
  const decider = new EngineDecider(connection, operationsMs, batching);
  const configuration = new EngineConfiguration(connection, operationsMs);
  const channels = new EngineChannels(connection, operationsMs, subscriber);
  const heartbeats = new HeartbeatBatcher(connection);
  // The contract's checks are core's (checkedEngine); here only what Redis keys can hold.
  return checkedEngine({
    name: 'redis',
    async decide(rules, asks) {
      checkPrefix('rules.prefix', rules.prefix);
      checkStates('rules.states', rules.states);
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
