/**
 * The throttle across processes on one Redis (standalone and a real Cluster): calls start in the order they
 * arrived, whichever process they arrived at (asserted on their arrival timestamps), never more than the
 * limit in any window, and a pause one process sets holds every process.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { serverEnv } from '../harness/live-process.js';
import { throttleProcess } from '../harness/throttle-process.js';
import { useTestCluster, useTestRedis } from '../harness/use-redis.js';

const testRedis = useTestRedis();
const testCluster = useTestCluster();
const running: Array<ReturnType<typeof throttleProcess>> = [];
afterEach(() => {
  for (const p of running.splice(0)) p.stop();
});
let n = 0;
/** How much later than its grant a process may stamp its start on a loaded machine. */
const SLACK_MS = 50;

/** `count` throttle processes of one limiter (LIMIT calls in any WINDOW_MS), ready. */
async function fleet(server: string, count: number, limit: number, windowMs: number) {
  const env = {
    ...serverEnv(server, testRedis, testCluster),
    PREFIX: `throttle-fleet-${process.pid}-${++n}`,
    LIMIT: String(limit),
    WINDOW_MS: String(windowMs),
  };
  const nodes = Array.from({ length: count }, () => throttleProcess(env));
  running.push(...nodes);
  await Promise.all(nodes.map((node) => node.until('READY')));
  return nodes;
}

/** Every start the nodes printed: id, start time, and the node. */
function starts(nodes: ReturnType<typeof throttleProcess>[]) {
  return nodes
    .flatMap((node, i) =>
      node.printed('START').map((line) => ({ id: Number(line.args[0]), at: Number(line.args[1]), node: i })),
    )
    .sort((a, b) => a.at - b.at);
}

describe.each(['standalone', 'Cluster'])('the throttle on a %s server, three processes', (server) => {
  it('calls start in arrival order across processes and never pass the limit in any window', async () => {
    const limit = 3;
    const windowMs = 600;
    const nodes = await fleet(server, 3, limit, windowMs);
    const calls = 15;
    const arrivals: Array<{ id: number; at: number }> = [];
    const perNode = [0, 0, 0];
    // Interleaved arrivals: call i at node i % 3 (then i % 2 for a mix), each once the one before is queued.
    for (let id = 0; id < calls; id++) {
      const at = id < 9 ? id % 3 : id % 2;
      perNode[at] = (perNode[at] as number) + 1;
      const arrived = await (nodes[at] as ReturnType<typeof throttleProcess>).ask(`run ${id}`, 'ARRIVED');
      arrivals.push({ id, at: Number(arrived.args[1]) });
    }
    await Promise.all(nodes.map((node, i) => node.counted('START', perNode[i] as number)));
    const started = starts(nodes);
    expect(started).toHaveLength(calls);
    // Arrival timestamps rise with the ids.
    expect(arrivals.map((a) => a.id)).toEqual([...arrivals].sort((a, b) => a.at - b.at).map((a) => a.id));
    // A start is stamped in its own process after Redis granted it, so a process the machine stalls can
    // print its start after the next call's: order is asserted up to SLACK_MS of that (the grants themselves
    // are 600 ms apart for calls three apart, a few ms apart within a window's batch).
    const byId = new Map(started.map((s) => [s.id, s.at]));
    for (let id = 1; id < calls; id++) {
      const late = (byId.get(id - 1) as number) - (byId.get(id) as number);
      expect(late, `call ${id} started ${late.toFixed(1)} ms before call ${id - 1}`).toBeLessThan(SLACK_MS);
    }
    expect(started.map((s) => s.id).filter((id, i) => Math.abs(id - i) > 1)).toEqual([]);
    // At most `limit` starts in any window (a start follows its grant by a little: SLACK_MS).
    for (const s of started) {
      const inWindow = started.filter((o) => o.at >= s.at && o.at < s.at + windowMs - SLACK_MS);
      expect(inWindow.length, `starts from ${s.id}`).toBeLessThanOrEqual(limit);
    }
    expect(nodes.flatMap((node) => node.printed('FAILED'))).toEqual([]);
  });

  it('a pause one process sets holds every process; a higher priority passes the calls waiting for their turn', async () => {
    const nodes = await fleet(server, 2, 100, 1_000);
    const [a, b] = nodes as [ReturnType<typeof throttleProcess>, ReturnType<typeof throttleProcess>];
    const paused = Number((await a.ask('pause 1200', 'PAUSED')).args[0]);
    await b.ask('run 1', 'ARRIVED');
    await a.ask('run 2', 'ARRIVED');
    await b.ask('run 3 5', 'ARRIVED');
    await Promise.all([a.counted('START', 1), b.counted('START', 2)]);
    const started = starts(nodes);
    for (const s of started) expect(s.at, `call ${s.id}`).toBeGreaterThanOrEqual(paused + 1_200 - 5);
    // Call 1 held the turn through the pause; call 3 came last but with priority 5: it passes call 2.
    expect(started.map((s) => s.id)).toEqual([1, 3, 2]);
  });
});
