import { describe, expect, it, vi } from 'vitest';
import { fixedWindow } from '../algorithms/fixed-window.js';
import { ManualClock } from '../foundation/clock.js';
import { createLimiter } from './limiter.js';
import { memoryStore } from './memory-store.js';

const emitted = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
const listWarnings = () =>
  emitted.mock.calls.filter((call) => (call[1] as { code: string }).code === 'SLUICE_LIST_NO_ADDRESS');

describe('SLUICE_LIST_NO_ADDRESS', () => {
  it('a decision with no address while the lists hold ranges is said once; peeks and calls with an address say nothing', async () => {
    const limiter = createLimiter({
      rules: fixedWindow({ limit: 5, windowMs: 60_000 }),
      store: memoryStore({ clock: new ManualClock(0) }),
      prefix: 'warned',
    });
    await limiter.deny('partner-key');
    await limiter.tryAcquire('k');
    expect(listWarnings()).toEqual([]); // key entries only: nothing an address could meet
    await limiter.deny('203.0.113.0/24');
    await limiter.peek('k');
    await limiter.tryAcquire('k', { address: '198.51.100.1' });
    expect(listWarnings()).toEqual([]);
    await limiter.tryAcquire('ip:203.0.113.9');
    await limiter.acquire('k');
    expect(listWarnings()).toHaveLength(1);
    const [message] = listWarnings()[0] as [string];
    expect(message).toContain('limiter "warned"');
    expect(message).toContain('{ address }');
  });
});
