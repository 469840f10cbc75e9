import { ManualClock, SluiceRangeError, SluiceTypeError, fixedWindow } from '@sluice/core';
import { type Engine, type EngineRules, checkEngine, isStale, memoryEngine } from '@sluice/core/engine';
import { describe, expect, it } from 'vitest';
import { atEach } from '../../packages/core/src/contract/asks-at.js';
import { divideShares } from '../../packages/core/src/contract/divide-shares.js';

const rule = fixedWindow({ limit: 2, windowMs: 60_000, name: 'w' });
const rules: EngineRules = { prefix: 'p', rules: [rule], states: ['w'] };
const ask = { key: 'k', permits: 1, maxWaitMs: 0, peek: false };

/** Every method called with one bad input: a rejected promise, never a synchronous throw. */
const BAD: [string, (e: Engine) => Promise<unknown>][] = [
  ['decide: rules.states', (e) => e.decide({ ...rules, states: [] }, atEach([ask], 0))],
  ['decide: asks[1].permits', (e) => e.decide(rules, atEach([ask, { ...ask, permits: 1.5 }], 0))],
  ['decide: asks[0].permits names no rule', (e) => e.decide(rules, atEach([{ ...ask, permits: { nope: 1 } }], 0))],
  ['decide: asks[0].maxWaitMs', (e) => e.decide(rules, atEach([{ ...ask, maxWaitMs: -1 }], 0))],
  ['decide: at', (e) => e.decide(rules, atEach([ask], Number.POSITIVE_INFINITY))],
  ['decide: rules.version', (e) => e.decide({ ...rules, version: 0 }, atEach([ask], 0))],
  ['adjust: key', (e) => e.adjust(rules, 5 as never, { op: 'reset' }, 0)],
  ['adjust: grantedMsAgo', (e) => e.adjust(rules, 'k', { op: 'refund', permits: 1, grantedMsAgo: -1 }, 0)],
  ['adjust: block ms', (e) => e.adjust(rules, 'k', { op: 'block', ms: Number.NaN }, 0)],
  [
    'lease: two rules',
    (e) =>
      e.lease(
        { ...rules, rules: [rule, fixedWindow({ limit: 1, windowMs: 1_000, name: 'x' })], states: ['w', 'x'] },
        { key: 'k', want: 1, node: 'n', liveMs: 1, hoardingDivisor: undefined, register: true },
        0,
      ),
  ],
  [
    'lease: node',
    (e) => e.lease(rules, { key: 'k', want: 1, node: '', liveMs: 1, hoardingDivisor: undefined, register: true }, 0),
  ],
  ['writeConfig: record', (e) => e.writeConfig('p', 1, { version: 2 } as never)],
  ['subscribe: channel', (e) => e.subscribe('', () => {})],
];

describe('memoryEngine', () => {
  it.each(BAD)('%s: rejects with a typed error and changes nothing', async (_, call) => {
    const engine = memoryEngine({ clock: new ManualClock(0) });
    let promise: Promise<unknown> | undefined;
    expect(() => {
      promise = call(engine);
    }).not.toThrow();
    const error = await (promise as Promise<unknown>).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error instanceof SluiceTypeError || error instanceof SluiceRangeError, String(error)).toBe(true);
    expect((error as Error).message).toMatch(/^(decide|adjust|lease|writeConfig|subscribe): /);
    const after = await engine.decide(rules, atEach([ask, ask, ask], 0));
    expect(after.map((d) => (isStale(d) ? undefined : d.decision.allowed))).toEqual([true, true, false]);
  });

  it('decides at its own clock when at is undefined, and at the given time otherwise', async () => {
    const clock = new ManualClock(5_000);
    const engine = memoryEngine({ clock });
    const own = await engine.decide(rules, atEach([ask], undefined));
    const given = await engine.decide(rules, atEach([ask], 70_000));
    const [mine] = own;
    const [theirs] = given;
    expect(mine === undefined || isStale(mine) ? undefined : mine.decidedAtMs).toBe(5_000);
    expect(theirs === undefined || isStale(theirs) ? undefined : theirs.decidedAtMs).toBe(70_000);
    expect((await engine.readConfig('p')).engineNowMs).toBe(5_000);
  });

  it('refuses unknown options by name', () => {
    expect(() => memoryEngine({ clokc: new ManualClock(0) } as never)).toThrow(
      /^memoryEngine options have no option "clokc".*the options are clock/,
    );
    expect(() => memoryEngine({ clock: 5 } as never)).toThrow(SluiceTypeError);
  });

  it('delivers messages after publish returns, in order, until stopped', async () => {
    const engine = memoryEngine();
    const heard: string[] = [];
    let got: () => void = () => {};
    const three = new Promise<void>((resolve) => {
      got = resolve;
    });
    const stop = await engine.subscribe('c', (m) => {
      heard.push(m);
      if (heard.length === 3) got();
    });
    const published = ['a', 'b', 'c'].map((m) => engine.publish('c', m));
    expect(heard).toEqual([]);
    await Promise.all(published);
    await three;
    expect(heard).toEqual(['a', 'b', 'c']);
    await stop();
    await engine.publish('c', 'd');
    await new Promise<void>((resolve) => queueMicrotask(resolve));
    expect(heard).toEqual(['a', 'b', 'c']);
  });
});

describe('checkEngine options', () => {
  it('refuses unknown options by name, and bad values', async () => {
    const engine = memoryEngine();
    await expect(checkEngine(engine, { seeds: 1 } as never)).rejects.toThrow(
      /^checkEngine options have no option "seeds".*the options are seed, steps, prefix/,
    );
    await expect(checkEngine(engine, { steps: 0 })).rejects.toThrow(SluiceRangeError);
    await expect(checkEngine(engine, { steps: 1_000_000 })).rejects.toThrow(/at most/);
    await expect(checkEngine({} as never)).rejects.toThrow(/checkEngine: engine must be an Engine/);
  });

  it('makes a bounded number of calls', async () => {
    const inner = memoryEngine();
    let calls = 0;
    const counted = new Proxy(inner, {
      get(target, name, receiver) {
        const value = Reflect.get(target, name, receiver);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          calls++;
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    const started = performance.now();
    const report = await checkEngine(counted, { seed: 3 });
    const ms = performance.now() - started;
    console.log(
      `checkEngine on memoryEngine: ${report.cases} cases, ${report.steps} steps, ${calls} calls, ${ms.toFixed(0)} ms`,
    );
    expect(calls).toBeLessThan(20_000);
  });
});

describe('divideShares (core twin)', () => {
  it('water-fills by demand and splits what nobody asked for', () => {
    const shares = divideShares(
      'demand',
      [
        { id: 'a', demand: 900 },
        { id: 'b', demand: 100 },
      ],
      1000,
    );
    expect(shares.get('a')).toBeCloseTo(0.9, 12);
    expect(shares.get('b')).toBeCloseTo(0.1, 12);
    const idle = divideShares(
      'demand',
      [
        { id: 'a', demand: 0 },
        { id: 'b', demand: 10 },
        { id: 'c', demand: 5000 },
      ],
      100,
    );
    expect([...idle.values()].reduce((x, y) => x + y, 0)).toBeCloseTo(1, 12);
    expect(idle.get('a')).toBeCloseTo(0.1 / 3, 12);
    expect(
      divideShares(
        'equal',
        [
          { id: 'a', demand: 1 },
          { id: 'b', demand: 2 },
        ],
        10,
      ).get('b'),
    ).toBe(0.5);
    expect(() => divideShares('fair' as never, [], 1)).toThrow(SluiceRangeError);
  });
});
