/**
 * postgresEngine, the engine contract on PostgreSQL: core's conformance suite (bit for bit the memory
 * engine's answers), two engines on two pools deciding one key at once, the database's clock, messages
 * between engines, expired rows swept, bad options refused by name, and a deadline when a lock is held.
 */
import { type Algorithm, SluiceRangeError, SluiceTypeError, fixedWindow } from '@sluice/core';
import {
  type DecideAnswer,
  type EngineDecision,
  type EngineRules,
  checkEngine,
  isStale,
  stateName,
} from '@sluice/core/engine';
import { postgresEngine } from '@sluice/postgres';
import type pg from 'pg';
import { describe, expect, it, vi } from 'vitest';
import { useTestDatabase } from '../harness/use-postgres.js';

const db = useTestDatabase();

let prefixes = 0;
const rulesOf = (rule: Algorithm): EngineRules => ({
  prefix: `pg-test-${++prefixes}`,
  rules: [rule],
  states: [stateName(rule)],
});
const ask = (key: string, at?: number) => ({ key, permits: 1, maxWaitMs: 0, peek: false, at });

function decision(answers: readonly DecideAnswer[]): EngineDecision {
  const answer = answers[0];
  if (answer === undefined || isStale(answer)) throw new Error(`not a decision: ${JSON.stringify(answers)}`);
  return answer;
}

async function databaseNowMs(pool: pg.Pool): Promise<number> {
  const { rows } = await pool.query<{ now: number }>(
    'SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS now',
  );
  return rows[0]?.now as number;
}

describe('postgresEngine', () => {
  // The seeds run together: each run has prefixes of its own, and PostgreSQL's round trips overlap.
  describe.concurrent("core's conformance suite", () => {
    for (const seed of [1, 2, 3]) {
      it(`passes checkEngine with seed ${seed}`, async () => {
        const engine = postgresEngine({ pool: db().pool(), timeoutMs: 5_000 });
        const started = performance.now();
        const report = await checkEngine(engine, { seed });
        console.log(
          `checkEngine seed ${seed}: ${report.cases} cases, ${report.steps} steps, ${Math.round(performance.now() - started)} ms`,
        );
        expect(report.cases).toBeGreaterThan(0);
      });
    }
  });

  it('never over-grants: 200 asks at once from two engines on two pools, limit 50, grant exactly 50', async () => {
    const one = postgresEngine({ pool: db().pool({ max: 8 }), timeoutMs: 20_000 });
    const two = postgresEngine({ pool: db().pool({ max: 8 }), timeoutMs: 20_000 });
    const rules = rulesOf(fixedWindow({ limit: 50, windowMs: 3_600_000, name: 'race' }));
    const answers = await Promise.all(
      Array.from({ length: 200 }, (_, i) => (i % 2 === 0 ? one : two).decide(rules, [ask('shared')])),
    );
    const granted = answers.filter((a) => decision(a).decision.allowed).length;
    expect(granted).toBe(50);
  });

  it('decides at the database clock when `at` is undefined', async () => {
    const pool = db().pool();
    const engine = postgresEngine({ pool, timeoutMs: 5_000 });
    const rules = rulesOf(fixedWindow({ limit: 5, windowMs: 60_000, name: 'clock' }));
    await engine.decide(rules, [ask('warm-up')]);
    const before = await databaseNowMs(pool);
    const answer = decision(await engine.decide(rules, [ask('k')]));
    const after = await databaseNowMs(pool);
    expect(answer.decidedAtMs).toBeGreaterThanOrEqual(before);
    expect(answer.decidedAtMs).toBeLessThanOrEqual(after);
    // A caller's time is the caller's, whatever the database's clock says.
    const given = decision(await engine.decide(rules, [ask('k', 1_000)]));
    expect(given.decidedAtMs).toBe(1_000);
    const read = await engine.readConfig(rules.prefix);
    expect(read.engineNowMs).toBeGreaterThanOrEqual(Math.floor(after));
  });

  it("delivers one engine's message to another's subscriber, and none after it stops", async () => {
    const speaker = postgresEngine({ pool: db().pool(), timeoutMs: 5_000 });
    const hearer = postgresEngine({ pool: db().pool(), timeoutMs: 5_000 });
    const heard: string[] = [];
    let arrived: (() => void) | undefined;
    const stop = await hearer.subscribe('news', (m) => {
      heard.push(m);
      arrived?.();
    });
    const first = new Promise<void>((resolve) => {
      arrived = resolve;
    });
    await speaker.publish('other channel', 'not for it');
    await speaker.publish('news', 'hello \u0000 \ud800 world');
    await first;
    expect(heard).toEqual(['hello \u0000 \ud800 world']);
    await stop();
    // A second subscriber hears what follows; the stopped one does not (its connection stopped listening).
    let second: (message: string) => void = () => undefined;
    const later = new Promise<string>((resolve) => {
      second = resolve;
    });
    const stopSecond = await hearer.subscribe('news', (m) => second(m));
    await speaker.publish('news', 'after');
    expect(await later).toBe('after');
    expect(heard).toEqual(['hello \u0000 \ud800 world']);
    await stopSecond();
    await expect(speaker.publish('news', 'x'.repeat(8_000))).rejects.toThrow(SluiceRangeError);
  });

  it('sweeps rows that expired on the database clock', async () => {
    const pool = db().pool();
    // A schema of its own: the sweep takes the oldest expired rows first, and the other tests leave many.
    const engine = postgresEngine({ pool, timeoutMs: 5_000, schema: 'swept' });
    const rules = rulesOf(fixedWindow({ limit: 1, windowMs: 100, name: 'short' }));
    const keys = ['a', 'b', 'c'];
    for (const key of keys) await engine.decide(rules, [ask(key)]);
    const count = async (expired: boolean) =>
      Number(
        (
          await pool.query<{ n: string }>(
            `SELECT count(*) AS n FROM swept.states WHERE key LIKE $1 AND (expires_at <= ` +
              `(extract(epoch FROM clock_timestamp()) * 1000)::float8) = $2`,
            [`%${rules.prefix}%`, expired],
          )
        ).rows[0]?.n,
      );
    // Waits for the database's clock to pass the rows' expiry, 1 s after the window's (an event, not a sleep).
    await vi.waitFor(async () => expect(await count(true)).toBe(3), { timeout: 10_000, interval: 20 });
    // The next call sweeps them (after it answers: a bounded delete beside it).
    await engine.decide(rulesOf(fixedWindow({ limit: 1, windowMs: 3_600_000, name: 'long' })), [ask('x')]);
    await vi.waitFor(async () => expect(await count(true)).toBe(0), { timeout: 10_000, interval: 20 });
    // An expired key's state is gone for decisions too: its one permit is there again.
    expect(decision(await engine.decide(rules, [ask('a')])).decision.allowed).toBe(true);
  });

  it("a new database's first call waits for its tables to be made, past its own deadline, and is answered", async () => {
    const pool = db().pool();
    // Another process holds the tables' creation lock (an engine starting beside this one): the first call waits.
    const holder = await pool.connect();
    await holder.query(`SELECT pg_advisory_lock(${0x5_1c_e0_01})`);
    const engine = postgresEngine({ pool, timeoutMs: 20, schema: 'first_call' });
    const rules = rulesOf(fixedWindow({ limit: 1, windowMs: 3_600_000, name: 'first' }));
    const first = engine.decide(rules, [ask('k')]);
    try {
      // Released once the engine waits on it (pg_locks shows the waiter): well past the call's 20 ms.
      await vi.waitFor(
        async () => {
          const { rows } = await pool.query<{ n: string }>(
            "SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted",
          );
          expect(Number(rows[0]?.n)).toBeGreaterThan(0);
        },
        { timeout: 10_000, interval: 10 },
      );
    } finally {
      await holder.query(`SELECT pg_advisory_unlock(${0x5_1c_e0_01})`);
      holder.release();
    }
    expect(decision(await first).decision.allowed).toBe(true);
  });

  it('holds any key as data: quotes, backslashes, NUL, lone surrogates and SQL in a key are only a key', async () => {
    const engine = postgresEngine({ pool: db().pool(), timeoutMs: 5_000 });
    const rules = rulesOf(fixedWindow({ limit: 1, windowMs: 3_600_000, name: 'hostile' }));
    const keys = [
      "x'); DROP TABLE sluice.states; --",
      "\\' OR '1'='1",
      'nul\u0000byte',
      'lone\ud800surrogate',
      "$1 $$ E'\\x'",
    ];
    for (const key of keys) expect(decision(await engine.decide(rules, [ask(key)])).decision.allowed).toBe(true);
    // Each key is its own: its one permit is spent, and no other key's.
    for (const key of keys) expect(decision(await engine.decide(rules, [ask(key)])).decision.allowed).toBe(false);
    expect(decision(await engine.decide(rules, [ask('plain')])).decision.allowed).toBe(true);
  });

  it("a rule's scope that gives no identity for a key rejects that call; the process and the other calls go on", async () => {
    const engine = postgresEngine({ pool: db().pool(), timeoutMs: 5_000 });
    const tenant = fixedWindow({
      limit: 5,
      windowMs: 3_600_000,
      name: 'tenant',
      scope: (key) => key.split(':')[1] ?? '',
    });
    const rules = rulesOf(tenant);
    const other = rulesOf(fixedWindow({ limit: 5, windowMs: 3_600_000, name: 'other' }));
    // Asked in one turn: the bad key's batch rejects, another prefix's batch of the same turn is answered.
    const bad = engine.decide(rules, [ask('x')]);
    const fine = engine.decide(other, [ask('k')]);
    await expect(bad).rejects.toBeInstanceOf(SluiceTypeError);
    expect(decision(await fine).decision.allowed).toBe(true);
    expect(decision(await engine.decide(rules, [ask('user:acme')])).decision.allowed).toBe(true);
  });

  it('refuses bad options by name', () => {
    const pool = db().pool();
    expect(() => postgresEngine({ pool, timeoutMS: 5 } as never)).toThrow(/timeoutMS/);
    expect(() => postgresEngine({ pool, timeoutMS: 5 } as never)).toThrow(SluiceTypeError);
    expect(() => postgresEngine({ pool, schema: 'Bad-Name' })).toThrow(SluiceRangeError);
    expect(() => postgresEngine({ pool, schema: 'Bad-Name' })).toThrow(/schema/);
    expect(() => postgresEngine({ pool, timeoutMs: -1 })).toThrow(/timeoutMs/);
    expect(() => postgresEngine({ pool: {} as never })).toThrow(/pool/);
    expect(() => postgresEngine(undefined as never)).toThrow(SluiceTypeError);
  });

  it('rejects within timeoutMs when a lock holds the call, and takes nothing', async () => {
    const pool = db().pool();
    const timeoutMs = 200;
    const engine = postgresEngine({ pool, timeoutMs });
    const rules = rulesOf(fixedWindow({ limit: 1, windowMs: 3_600_000, name: 'held' }));
    await engine.decide(rules, [{ ...ask('k'), peek: true }]);
    const holder = await pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE sluice.states IN ACCESS EXCLUSIVE MODE');
      const started = performance.now();
      await expect(engine.decide(rules, [ask('k')])).rejects.toThrow(/PostgreSQL did not answer within 200 ms/);
      // An upper bound only, with generous slack (a loaded machine is slow, never faster).
      expect(performance.now() - started).toBeLessThan(timeoutMs + 2_000);
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
    // The call that timed out took nothing: the key's one permit is still there.
    const after = decision(await engine.decide(rules, [ask('k')]));
    expect(after.decision.allowed).toBe(true);
  });
});
