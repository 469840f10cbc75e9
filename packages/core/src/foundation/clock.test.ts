import { describe, expect, it } from 'vitest';
import { ManualClock, systemClock } from './clock.js';

describe('clocks', () => {
  it('systemClock is monotonic wall time in ms', () => {
    const a = systemClock.now();
    const b = systemClock.now();
    expect(b).toBeGreaterThanOrEqual(a);
    expect(Math.abs(a - Date.now())).toBeLessThan(60_000);
  });

  it('systemClock.sleep waits on timers and honours abort', async () => {
    await systemClock.sleep?.(1);
    const c = new AbortController();
    const p = systemClock.sleep?.(60_000, c.signal);
    c.abort();
    await expect(p).rejects.toMatchObject({ code: 'ABORTED' });
  });

  it('ManualClock moves only when told; sleepers wake when time passes their deadline', async () => {
    const clock = new ManualClock(100);
    const woken: number[] = [];
    void clock.sleep(50).then(() => woken.push(50));
    void clock.sleep(10).then(() => woken.push(10));
    clock.advance(9);
    await Promise.resolve();
    expect(woken).toEqual([]);
    clock.advance(1);
    await Promise.resolve();
    expect(woken).toEqual([10]);
    clock.set(1_000);
    await Promise.resolve();
    expect(woken).toEqual([10, 50]);
    expect(clock.pendingSleeps).toBe(0);
  });

  it('ManualClock refuses bad times and can step back', () => {
    const clock = new ManualClock(0);
    expect(() => clock.advance(-1)).toThrow(/ms must be a finite number >= 0, got -1/);
    expect(() => clock.advance(NaN)).toThrow(RangeError);
    expect(() => new ManualClock(Infinity)).toThrow(/startMs/);
    clock.set(-5);
    expect(clock.now()).toBe(-5);
  });

  it('ManualClock with autoAdvance moves itself on sleep (like a fake stopwatch)', async () => {
    const clock = new ManualClock(0, { autoAdvance: true });
    await clock.sleep(250);
    expect(clock.now()).toBe(250);
  });
});
