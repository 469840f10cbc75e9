/**
 * An override's rules, as the admin API takes them ([{ kind, params, name? }]), are written by an operator
 * today: the renamed parameters' earlier names (gcra's `rate`, tokenBucket's `initial`), which only a stored
 * record written by an earlier version may hold, are refused naming the new one, as the rule factories
 * refuse them; and a field of a rule the API does not take (`blockMs`, `scope`) is refused, not dropped.
 */
import { createLimiter, fixedWindow } from '@sluice/core';
import { adminRouter } from '@sluice/core/admin';
import { describe, expect, it } from 'vitest';

async function override(rule: unknown): Promise<{ status: number; body: string; limit: number }> {
  const limiter = createLimiter({ rules: fixedWindow({ name: 'api', limit: 3, windowMs: 60_000 }), prefix: 'api' });
  const admin = adminRouter({
    limiters: [limiter],
    authorize: (request) => request.headers.get('authorization') === 'Bearer t',
    basePath: '/admin',
  });
  const response = await admin.fetch(
    new Request('http://localhost/admin/api/limiters/api/keys/user%3A1/override', {
      method: 'PUT',
      headers: { 'content-type': 'application/json', authorization: 'Bearer t' },
      body: JSON.stringify({ rules: [rule] }),
    }),
  );
  const decision = await limiter.tryAcquire('user:1');
  await limiter.close();
  return { status: response.status, body: await response.text(), limit: decision.limit };
}

describe("the admin API's override rules", () => {
  it('takes the parameters by their names (the control: 200)', async () => {
    const taken = await override({ kind: 'gcra', name: 'g', params: { permitsPerSecond: 5, burst: 7 } });
    expect(taken.status).toBe(200);
  });

  it("refuses gcra's earlier `rate` and tokenBucket's earlier `initial`, naming the new names", async () => {
    const rate = await override({ kind: 'gcra', name: 'g', params: { rate: 5, burst: 7 } });
    expect(rate.status).toBe(400);
    expect(rate.body).toMatch(/permitsPerSecond/);
    const initial = await override({
      kind: 'tokenBucket',
      name: 't',
      params: { capacity: 10, refillPerSecond: 1, initial: 2 },
    });
    expect(initial.status).toBe(400);
    expect(initial.body).toMatch(/initialPermits/);
  });

  it('refuses a field of a rule it does not take, instead of dropping it', async () => {
    const banning = await override({
      kind: 'fixedWindow',
      name: 'api',
      params: { limit: 10, windowMs: 60_000 },
      blockMs: 60_000,
    });
    expect(banning.status).toBe(400);
    expect(banning.body).toMatch(/blockMs/);
  });
});
