import { ManualClock } from '@sluice/core';
import { checkEngine, memoryEngine } from '@sluice/core/engine';
import { describe, expect, it } from 'vitest';

describe('checkEngine', () => {
  it('passes on memoryEngine', async () => {
    const report = await checkEngine(memoryEngine(), { seed: 1 });
    expect(report.cases).toBeGreaterThan(20);
  });
  it('passes on memoryEngine with a manual clock', async () => {
    const report = await checkEngine(memoryEngine({ clock: new ManualClock(0) }), { seed: 2 });
    expect(report.steps).toBeGreaterThan(100);
  });
});
