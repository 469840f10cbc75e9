import type { Algorithm } from '@sluice/core';
import type { Engine } from '@sluice/core/engine';
import {
  type EngineHost,
  type EngineUse,
  type LimiterTables,
  type StartupCheck,
  inCall,
  withHostMaker,
} from '@sluice/core/internal';
import { RedisAccessLists } from '../access-lists.js';
import { ChannelListener } from '../connection/channel-listener.js';
import type { RedisConnection } from '../connection/connection.js';
import { writeDescriptor } from '../descriptor.js';
import { RedisPresence } from '../fleet/presence.js';
import { redisHealthProbe } from '../health-probe.js';
import { stateKey } from '../key-layout.js';
import { RedisBoards } from '../limited-keys-board.js';
import { StartupChecks } from '../preflight.js';
import {
  type LuaScript,
  adjustScript,
  exactScripts,
  leaseScript,
  membershipScript,
  presenceScript,
} from '../scripts.js';
import { type RedisEngineOptions, parseEngineOptions } from './engine-options.js';
import { engineOnConnection } from './redis-engine.js';

/**
 * The scripts a limiter's use of the engine runs, as the start-up check tries their commands.
 * @example
 * scriptsOf({ lease: ['tokenBucket'], adjust: ['tokenBucket'] }) // [lease_tokenBucket, adjust_tokenBucket]
 */
export function scriptsOf(use: EngineUse): LuaScript[] {
  return [
    ...(use.lease ?? []).map((kind) => leaseScript(kind)),
    ...(use.adjust === undefined ? [] : [adjustScript(use.adjust)]),
    ...(use.decide === undefined ? [] : exactScripts(use.decide)),
    ...(use.heartbeat === true ? [membershipScript()] : []),
    ...(use.presence === true ? [presenceScript()] : []),
  ];
}

/**
 * The engine host (see EngineHost in @sluice/core/internal) on one Redis connection: the engine with the
 * modes' deadlines, the health machine's probe (EXISTS of the failing key's slot), preflight.lua's start-up
 * checks, the descriptor the CLI reads, the lists and boards, presence.lua's fleet count, and one subscriber
 * of the store's own that the engine's messages and the lists' changes share.
 * @example
 * const host = redisHost(connection, 50, (error) => emitSafely(store, 'store-error', error))
 * const decision = await host.engine.decide(rules, asks)
 */
export function redisHost(
  connection: RedisConnection,
  timeoutMs: number,
  onMisconfigured: (error: Error) => void,
): EngineHost {
  const channels = new ChannelListener(connection, timeoutMs);
  const scriptChecks = new StartupChecks(connection, timeoutMs, onMisconfigured);
  const checks: StartupCheck = {
    add: (prefix, use, id) => scriptChecks.add(prefix, scriptsOf(use), id),
    remove: (id) => scriptChecks.remove(id),
    ready: () => scriptChecks.ready(),
  };
  return {
    engine: engineOnConnection(connection, undefined, { channels }),
    health: redisHealthProbe(connection),
    probeKey: (prefix, identity, state) => stateKey(prefix, identity, state),
    checks,
    describe: (prefix: string, mode: 'exact' | 'leased' | 'divided', rules: readonly Algorithm[]) =>
      void writeDescriptor(connection, prefix, mode, rules),
    tables: (heard): LimiterTables => {
      const boards = new RedisBoards({ connection, timeoutMs }, scriptChecks);
      const lists = new RedisAccessLists({
        connection,
        timeoutMs,
        checks: scriptChecks,
        channels: heard ? channels : undefined,
      });
      return { bindAccessList: (prefix) => lists.bind(prefix), bindLimitedKeys: (prefix) => boards.bind(prefix) };
    },
    presence: (options) => new RedisPresence({ ...options, connection }),
    subscribed: () => channels.subscribed(),
    close: () => channels.close(),
  };
}

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
 * move: checkEngine's `sharedIdentities: false`), and such asks are decided one after another. The engine
 * carries its host (`@sluice/core/internal`'s EngineHost), which the hybrid modes run on.
 * @example
 * import { Redis } from 'ioredis'
 * const engine = redisEngine({ redis: new Redis() })
 * const [answer] = await engine.decide({ prefix: 'api', rules: [rule], states: [stateName(rule)] },
 *   [{ key: 'user:1', permits: 1, maxWaitMs: 0, peek: false, at: undefined }])
 */
export function redisEngine(options: RedisEngineOptions): Engine {
  return inCall('redisEngine', () => {
    const { redis: connection, timeoutMs } = parseEngineOptions(options);
    // leasedStore({ redis }) and dividedStore({ redis }) run their modes over it, through its host.
    return withHostMaker(engineOnConnection(connection, timeoutMs), {
      host: (modeTimeoutMs, onMisconfigured) => redisHost(connection, modeTimeoutMs, onMisconfigured),
    });
  });
}
