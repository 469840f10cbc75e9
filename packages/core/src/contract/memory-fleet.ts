/**
 * The memory engine's heartbeat: the twin of @sluice/hybrid's membership.lua for one fleet per call. It records
 * the node and its demand, makes the division at most once per interval (the first heartbeat after it ends),
 * and answers this node's allocations in the current and the previous division.
 */
import type { Heartbeat, HeartbeatAnswer } from './engine.js';
import { byDemand, waterLevel } from './divide-shares.js';
import { type EngineState, compositeKey } from './memory-engine-state.js';

/** A node's allocations, fractions of the limit (previous undefined: none). */
interface Allocation {
  readonly current: number;
  readonly previous: number | undefined;
}

/** One fleet: membership.lua's four keys. */
export interface Fleet {
  /** Node id -> when it was last seen. */
  readonly members: Map<string, number>;
  /** Node id -> its recent demand. */
  readonly demands: Map<string, number>;
  readonly allocations: Map<string, Allocation>;
  /** The current division: when it was made, the live nodes then, the reserve's fraction in it. */
  summary: { readonly at: number; readonly nodes: number; readonly reserve: number } | undefined;
}

/**
 * The fraction of the burst a node allocated `share` holds locally, and the whole permits it holds (0: none,
 * the reserve serves it): membership.lua's held, localFraction in @sluice/hybrid's shares.ts.
 */
function held(share: number, beat: Heartbeat): [number, number] {
  const fraction = beat.divided * Math.min(1, share);
  const permits = Math.floor(beat.burst * fraction + 1e-9);
  if (permits < beat.minLocal) return [0, 0];
  return [fraction, permits];
}

/** Makes the division for `n` nodes and writes every node's allocations; returns the reserve (membership.lua's allocate). */
function allocate(fleet: Fleet, n: number, beat: Heartbeat, first: boolean): number {
  const { limit } = beat;
  const demands = [...fleet.demands].map(([id, demand]) => ({ id, demand })).sort(byDemand);
  let level = Number.POSITIVE_INFINITY;
  let spare = 0;
  if (beat.division === 'demand' && n > 0)
    ({ level, spare } = waterLevel(
      demands.map((d) => d.demand),
      n,
      limit,
    ));
  const floor = n > 0 ? (0.1 * limit) / n : 0;
  const rows: { id: string; share: number; current: number | undefined; previous: number | undefined }[] = [];
  let allocated = 0;
  let asked = 0;
  if (n > 0) {
    for (const { id, demand } of demands) {
      let share = limit / n;
      if (beat.division === 'demand') share = Math.min(Math.max(demand, floor), level) + spare;
      const before = fleet.allocations.get(id);
      const row = { id, share: share / limit, current: before?.current, previous: before?.previous };
      rows.push(row);
      if (row.current !== undefined) allocated += row.current;
      else asked += row.share;
    }
  }
  const headroom = Math.max(0, 1 - allocated);
  const part = asked > 0 && (beat.divided >= 1 || first) ? Math.min(1, headroom / asked) : 0;
  // The reserve is what no node holds before or after hearing this division.
  let fractions = 0;
  let permits = 0;
  for (const row of rows) {
    const lastHeld = row.current !== undefined && row.previous !== undefined ? Math.min(row.current, row.previous) : 0;
    const [f, p] = held(Math.max(row.share, lastHeld), beat);
    fractions += f;
    permits += p;
  }
  const reserve = beat.windowed ? (beat.burst - permits) / beat.burst : 1 - fractions;
  for (const row of rows) {
    // A newcomer holds at once its part of what no node was allocated before (see membership.lua).
    const previous = row.current ?? (part > 0 ? row.share * part : undefined);
    fleet.allocations.set(row.id, { current: row.share, previous });
  }
  return Math.max(0, reserve);
}

/**
 * Whether `node` is another live process's id: a later time than its own last heartbeat's under it
 * (@sluice/redis's node_seen.lua). Else records it at `now`.
 */
function markSeen(fleet: Fleet, node: string, now: number, last: number | undefined): boolean {
  if (last !== undefined) {
    const seen = fleet.members.get(node);
    if (seen !== undefined && seen > last) return true;
  }
  fleet.members.set(node, now);
  return false;
}

/** Drops the nodes unseen since `before`. */
function dropDead(fleet: Fleet, before: number): void {
  for (const [node, seen] of fleet.members) {
    if (seen < before) {
      fleet.members.delete(node);
      fleet.demands.delete(node);
      fleet.allocations.delete(node);
    }
  }
}

/** One node's heartbeat at `now`. */
export function heartbeatOf(data: EngineState, beat: Heartbeat, now: number): HeartbeatAnswer {
  const { prefix, node, leaving } = beat;
  // A fleet is one rule's nodes within the prefix; the version is the prefix's.
  const fleetId = compositeKey(prefix, beat.fleet);
  const stored = data.versions.get(prefix);
  let version = stored ?? 1;
  if (!leaving && version < beat.version) {
    data.versions.set(prefix, beat.version);
    // None stored while the node is past version 1: answered 1, so that the node reads the configuration.
    if (stored !== undefined) version = beat.version;
  }
  let fleet = data.fleets.get(fleetId);
  if (fleet === undefined) {
    fleet = { members: new Map(), demands: new Map(), allocations: new Map(), summary: undefined };
    data.fleets.set(fleetId, fleet, Math.ceil(beat.liveMs * 2));
  }
  let reused = false;
  if (leaving) {
    fleet.members.delete(node);
    fleet.demands.delete(node);
    fleet.allocations.delete(node);
  } else {
    reused = markSeen(fleet, node, now, beat.lastAt);
    if (!reused) fleet.demands.set(node, beat.demand);
  }
  const summary = fleet.summary;
  const founded = !leaving && summary === undefined && beat.knownNodes === 0;
  // A clock that went back past the last division also makes one (else the fleet would wait for it).
  if (!leaving && (summary === undefined || now - summary.at >= beat.intervalMs || now < summary.at)) {
    dropDead(fleet, now - beat.liveMs);
    const nodes = fleet.members.size;
    // A fleet's first division is made for the fleet its founder knew or expects.
    const among =
      summary === undefined ? Math.max(nodes, beat.knownNodes > 0 ? beat.knownNodes : beat.assumedNodes) : nodes;
    const reserve = allocate(fleet, among, beat, founded);
    fleet.summary = { at: now, nodes, reserve };
    // Renewed by each division: the fleet outlives its last node by 2 x liveMs.
    data.fleets.expire(fleetId, Math.ceil(beat.liveMs * 2));
  }
  const mine = !leaving && !reused ? fleet.allocations.get(node) : undefined;
  return {
    at: now,
    engineNowMs: data.clock.now(),
    nodes: fleet.summary?.nodes ?? 0,
    current: mine?.current,
    previous: mine?.previous,
    founded: founded && !reused,
    reserve: beat.divided < 1 ? fleet.summary?.reserve : undefined,
    idTaken: reused,
    version,
  };
}
