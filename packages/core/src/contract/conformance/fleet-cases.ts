/**
 * The heartbeat cases: scripted fleets (founding, joins, steady beats, a change of demand, a leave, a node
 * gone silent, an id two processes were given), each answer compared with the reference's, and the
 * allocations of one division never summing past the limit.
 */
import type { Heartbeat, HeartbeatAnswer } from '../engine.js';
import { type ConformanceRun, Timeline } from './conformance-run.js';
import type { Prng } from './prng.js';
import { beatOf } from './heartbeats.js';

const EPOCH = 1_767_225_600_000;
const INTERVAL_MS = 1_000;

/** What a node of the script knows between its heartbeats. */
interface Node {
  readonly id: string;
  demand: number;
  lastAt: number | undefined;
  knownNodes: number;
}

/** An answer without the engine's own clock (which the reference does not share). */
function comparable(answer: HeartbeatAnswer): unknown {
  const { engineNowMs: _, ...rest } = answer;
  return rest;
}

/** One scripted fleet under `division`, with or without a reserve. */
async function fleet(run: ConformanceRun, rng: Prng, division: 'equal' | 'demand', divided: number): Promise<void> {
  const prefix = run.prefix();
  const time = new Timeline(EPOCH + rng.int(0, 1_000) * 1_000);
  const windowed = rng.chance(0.5);
  const beatFor = (node: Node, leaving: boolean, where: string): Heartbeat =>
    beatOf(where, {
      node: node.id,
      leaving,
      liveMs: 3 * INTERVAL_MS,
      intervalMs: INTERVAL_MS,
      limit: 100,
      burst: 100,
      demand: node.demand,
      division,
      divided,
      windowed,
      lastAt: node.lastAt,
      knownNodes: node.knownNodes,
      assumedNodes: 2,
    });
  const beat = async (node: Node, at: number, leaving = false, where = prefix): Promise<HeartbeatAnswer> => {
    run.next();
    const answer = await run.both('heartbeat', (e) => e.heartbeat(beatFor(node, leaving, where), at), comparable);
    if (!answer.idTaken) node.lastAt = answer.at;
    node.knownNodes = answer.nodes;
    return answer;
  };
  /** Every node beats once, within one interval: they answer one division, whose allocations sum to 1 at most. */
  const round = async (nodes: readonly Node[]): Promise<void> => {
    let sum = 0;
    const start = time.advance(INTERVAL_MS);
    for (const node of nodes) {
      const answer = await beat(node, time.advance(rng.int(1, 20)));
      if (time.at - start < INTERVAL_MS) sum += answer.current ?? 0;
    }
    run.expect(sum <= 1 + 1e-9, 'heartbeat: the allocations of one division', 'at most 1 in all', sum);
  };
  const demand = (): number => rng.pick([0, 1, 10, 40, 80, 200]);
  const a: Node = { id: 'a', demand: demand(), lastAt: undefined, knownNodes: 0 };
  const b: Node = { id: 'b', demand: demand(), lastAt: undefined, knownNodes: 0 };
  const c: Node = { id: 'c', demand: demand(), lastAt: undefined, knownNodes: 0 };
  const founder = await beat(a, time.advance(0));
  run.expect(founder.founded, 'heartbeat: the first node founds the fleet', true, founder.founded);
  await beat(b, time.advance(5));
  await beat(c, time.advance(5));
  for (let r = 0; r < 3; r++) await round([a, b, c]);
  // Demand changes.
  a.demand = demand();
  c.demand = demand();
  for (let r = 0; r < 2; r++) await round([a, b, c]);
  // c leaves; b goes silent and is dropped once it is not live.
  await beat(c, time.advance(10), true);
  for (let r = 0; r < 4; r++) await round([a]);
  // Another process given a's id: it records itself under the id; a, whose last write is older, finds it taken.
  const twin: Node = { id: 'a', demand: demand(), lastAt: undefined, knownNodes: 0 };
  await beat(twin, time.advance(10));
  const taken = await beat(a, time.advance(10));
  run.expect(taken.idTaken, 'heartbeat: a node id another live process wrote since', true, taken.idTaken);
  // A node that knew a fleet of 3 finds none (a backend that lost it): it makes the division, but founds nothing.
  const again: Node = { id: 'd', demand: demand(), lastAt: undefined, knownNodes: 3 };
  const refounded = await beat(again, time.advance(10), false, run.prefix());
  run.expect(!refounded.founded, 'heartbeat: a node that knew a fleet does not found one', false, refounded.founded);
}

/** Fleets divided equally and by demand, with and without a reserve. */
export async function fleetCase(run: ConformanceRun): Promise<void> {
  const rng = run.begin('heartbeat');
  for (const division of ['equal', 'demand'] as const)
    for (const divided of [1, 0.7]) await fleet(run, rng, division, divided);
}
