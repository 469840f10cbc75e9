import { describeValue } from '@sluice/core/internal';
import type { RedisConnection } from '../connection/connection.js';
import { membershipKeys, versionKeyBeside } from '../key-layout.js';
import { membershipScript } from '../scripts.js';

/** One divided limiter's fleet, as its heartbeat answers it. */
export interface FleetSummary {
  /** Live nodes of the limiter's fleet (this one included). */
  readonly nodes: number;
  /** This node's allocation in the fleet's current division, a fraction of the limit (undefined: none yet). */
  readonly current: number | undefined;
  /** Its allocation in the division before, an interval or more older (undefined: none). */
  readonly previous: number | undefined;
  /**
   * True when this heartbeat founded the fleet (its first division: no node held any of the limit before), so
   * the keys this node meets need not start spent.
   */
  readonly founded: boolean;
  /** The reserve's fraction of the limit in the current division: what no node holds (undefined: none). */
  readonly reserve: number | undefined;
  /** When this heartbeat recorded the node, as the script wrote it (what the next one passes as lastSeen). */
  readonly seenAt: string;
  /** Redis's TIME at this heartbeat, in ms (a node compares its clock with it). */
  readonly redisTimeMs: number;
  /**
   * True when the node id is another live process's: nothing was recorded and no allocation answered (see
   * NodeIdentity); the node joins again under an id of its own.
   */
  readonly reused: boolean;
  /**
   * The configuration version of the fleet's slot (live limits: 1 until limiter.reconfigure): a node that
   * decides under an older one reads the configuration.
   */
  readonly version: number;
}

/** One heartbeat call of one node for the limiters of one slot (what membership.lua takes). */
export interface HeartbeatRequest {
  readonly nodeId: string;
  /** How long a node counts as live after its last heartbeat, in ms. */
  readonly liveMs: number;
  /** The heartbeat interval: the summary is computed again once it is this old, in ms. */
  readonly intervalMs: number;
  /** Now on the client clock, or undefined for Redis TIME. */
  readonly nowMs: number | undefined;
  /** The node leaves these limiters' fleets instead of reporting to them. */
  readonly leaving: boolean;
  readonly limiters: readonly {
    prefix: string;
    rule: string;
    limitPerSecond: number;
    demand: number;
    mode: 'equal' | 'demand';
    burst: number;
    windowed: boolean;
    divided: number;
    /** The fewest whole permits of the burst a node holds locally (a smaller share is the reserve's). */
    leastHeld: number;
    /** The score this node's last answered heartbeat wrote to this fleet ('' unknown; see NodeIdentity). */
    lastSeen?: string;
    /** The live nodes this node last heard the fleet had (0: none yet); a fleet Redis lost is founded again as it. */
    knownNodes?: number;
    /** The fleet size expected before one is heard: a new fleet's first division is made for at least this many. */
    assumedNodes?: number;
    /** The configuration version the node decides this limiter under (1 unless given). */
    version?: number;
  }[];
}

/**
 * Runs membership.lua once: reports this node to (or takes it out of) each limiter's fleet and answers each
 * fleet's summary, in the order of `request.limiters`, which must share one Cluster slot.
 * @example
 * const [fleet] = await runHeartbeat(connection, { nodeId: 'a', liveMs: 3000, intervalMs: 1000, nowMs: undefined,
 *   leaving: false, limiters: [{ prefix: 'api', rule: 'fw', limitPerSecond: 1000, demand: 120, mode: 'demand',
 *   burst: 1000, windowed: true, divided: 0.7, leastHeld: 1 }] })
 */
export async function runHeartbeat(redis: RedisConnection, request: HeartbeatRequest): Promise<FleetSummary[]> {
  const { nodeId, liveMs, intervalMs, nowMs, leaving, limiters } = request;
  const args = [nodeId, String(liveMs), nowMs === undefined ? '' : String(nowMs), leaving ? '1' : '0'];
  args.push(String(intervalMs));
  for (const l of limiters)
    args.push(
      String(l.limitPerSecond),
      String(leaving ? 0 : l.demand),
      l.mode,
      String(l.burst),
      String(l.divided),
      l.windowed ? '1' : '0',
      String(l.leastHeld),
      l.lastSeen ?? '',
      String(l.knownNodes ?? 0),
      String(l.assumedNodes ?? 1),
      String(l.version ?? 1),
    );
  const keys = limiters.flatMap((l) => {
    const fleet = membershipKeys(l.prefix, l.rule);
    return [...fleet, versionKeyBeside(l.prefix, fleet[0], redis.isCluster)];
  });
  const reply = await redis.runScript(membershipScript(), keys, args);
  if (!Array.isArray(reply) || reply.length !== 2 + 7 * limiters.length)
    throw new TypeError(
      `the ${membershipScript().name} script answered ${describeValue(reply)}, not two times and 7 strings per limiter`,
    );
  const [seenAt, redisTime, ...values] = reply.map((v) => String(v)) as [string, string, ...string[]];
  const allocation = (value: string | undefined): number | undefined =>
    value === undefined || value === '-' || !Number.isFinite(Number(value)) ? undefined : Number(value);
  return limiters.map((_, i) => {
    const [nodes, current, previous, founded, reserve, reused, version] = values.slice(7 * i, 7 * i + 7);
    return {
      nodes: Math.max(1, Number(nodes) || 0),
      current: allocation(current),
      previous: allocation(previous),
      founded: founded === '1',
      reserve: allocation(reserve),
      seenAt,
      redisTimeMs: Number(redisTime),
      reused: reused === '1',
      version: Number(version) || 1,
    };
  });
}
