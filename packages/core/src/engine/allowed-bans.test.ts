/**
 * Bans against the allow list: an operator's `block()` outranks it, a rule's own `blockMs` ban does not (an
 * allowed key skips the rules, and their bans with them), on the memory store (Redis: test/redis/allowed-bans.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { fixedWindow } from '../algorithms/fixed-window.js';
import { ManualClock } from '../foundation/clock.js';
import { createLimiter } from './limiter.js';
import { memoryStore } from './memory-store.js';

function limiter() {
  const clock = new ManualClock(1_000_000);
  const rules = fixedWindow({ name: 'api', limit: 2, windowMs: 60_000, blockMs: 600_000 });
  return createLimiter({ rules, store: memoryStore({ clock }), prefix: 'bans' });
}

describe('bans and the allow list', () => {
  it("a rule's blockMs ban gives way to the allow list; an explicit block() does not, by key or by address", async () => {
    const l = limiter();
    for (let i = 0; i < 3; i++) await l.tryAcquire('p'); // the third denial starts the rule's 10-minute ban
    expect((await l.tryAcquire('p')).blocked).toBe(true);
    await l.allow('p');
    expect(await l.tryAcquire('p')).toMatchObject({ allowed: true, access: { list: 'allow', entry: 'p' } });
    expect((await l.peek('p')).allowed).toBe(true);
    await l.unlist('p');
    expect((await l.tryAcquire('p')).blocked).toBe(true); // the rule's ban is still the key's off the list

    await l.allow(['q', '192.168.0.0/16']);
    await l.block('q', 60_000);
    await l.block('z', 60_000);
    expect(await l.tryAcquire('q')).toMatchObject({ allowed: false, blocked: true });
    expect(await l.peek('q')).toMatchObject({ allowed: false, blocked: true });
    expect(await l.tryAcquire('z', { address: '192.168.1.1' })).toMatchObject({ allowed: false, blocked: true });
    await expect(l.acquire('q')).rejects.toMatchObject({ code: 'NEVER_ALLOWED' });
    await l.unblock('q');
    expect((await l.tryAcquire('q')).allowed).toBe(true);
  });

  it("block() on a key a rule banned for longer keeps that end, as the operator's: the allow list gives way to it", async () => {
    const l = limiter();
    for (let i = 0; i < 3; i++) await l.tryAcquire('p'); // the rule's ban: 10 minutes
    await l.allow('p');
    await l.block('p', 60_000);
    const d = await l.tryAcquire('p');
    expect(d).toMatchObject({ allowed: false, blocked: true });
    expect(d.retryAfterMs).toBeGreaterThan(60_000); // the rule's ban's end, not the block's
  });
});
