/**
 * memoryEngine keeps one fleet per (prefix, fleet name): two prefixes' fleets are never one, whatever
 * characters the names hold (the memory engine takes any string; compositeKey keeps its other keys apart).
 */
import { type Heartbeat, memoryEngine } from '@sluice/core/engine';
import { ManualClock } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import { beatOf } from '../../packages/core/src/contract/conformance/heartbeats.js';

const beat = (prefix: string, fleet: string, node: string): Heartbeat =>
  beatOf(prefix, { fleet, node, windowed: false });

describe('memoryEngine fleets', () => {
  it("keeps a prefix's fleet apart from another prefix's when the names hold a newline", async () => {
    const engine = memoryEngine({ clock: new ManualClock(0) });
    // The same two heartbeats in fleets of plain names: each founds its own.
    await engine.heartbeat(beat('p', 'c', 'n1'), 1_000);
    expect(await engine.heartbeat(beat('q', 'c', 'n2'), 1_000)).toMatchObject({ nodes: 1, founded: true, current: 1 });
    await engine.heartbeat(beat('a\nb', 'c', 'n1'), 1_000);
    const other = await engine.heartbeat(beat('a', 'b\nc', 'n2'), 1_000);
    // n2 is alone in its fleet: it founded it and holds the whole limit.
    expect(other).toMatchObject({ nodes: 1, founded: true, current: 1 });
  });
});
