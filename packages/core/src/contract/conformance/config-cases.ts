/**
 * The configuration cases: the record's compare-and-set and its conflicts, and configuration versions: a
 * call under an older version than one named before is refused as stale and changes nothing.
 */
import { fixedWindow } from '../../algorithms/fixed-window.js';
import { stateName } from '../../algorithms/rule-name.js';
import { atEach } from '../asks-at.js';
import { type DecideAnswer, type Engine, type EngineRules, type Heartbeat, isStale } from '../engine.js';
import { type ConformanceRun, Timeline } from './conformance-run.js';
import { beatOf } from './heartbeats.js';

const EPOCH = 1_767_225_600_000;

/** readConfig and writeConfig: none stored, a write expecting 1, a conflict, a write over it. */
export async function configCase(run: ConformanceRun): Promise<void> {
  run.begin('config');
  const prefix = run.prefix();
  run.next();
  const none = await run.answer('readConfig', (e) => e.readConfig(prefix));
  run.same('readConfig (none stored)', undefined, none.record);
  run.expect(Number.isInteger(none.engineNowMs), 'readConfig: engineNowMs', 'whole ms', none.engineNowMs);
  const first = { version: Math.max(none.engineNowMs, 1) + 1, text: '{"rules":1}' };
  const steps: [string, (e: Engine) => Promise<unknown>, unknown][] = [
    ['writeConfig (expected 1, none stored)', (e) => e.writeConfig(prefix, 1, first), { written: true }],
    [
      'writeConfig (expected 1, one stored)',
      (e) => e.writeConfig(prefix, 1, first),
      { written: false, conflict: first.version },
    ],
    [
      'writeConfig (expected the stored version)',
      (e) => e.writeConfig(prefix, first.version, { version: first.version + 5, text: 'second' }),
      { written: true },
    ],
    [
      'writeConfig (expected an older version)',
      (e) => e.writeConfig(prefix, first.version, { version: first.version + 9, text: 'lost' }),
      { written: false, conflict: first.version + 5 },
    ],
  ];
  for (const [what, call, expected] of steps) {
    run.next();
    run.same(what, expected, await run.answer(what, call));
  }
  run.next();
  const read = await run.answer('readConfig', (e) => e.readConfig(prefix));
  run.same('readConfig', { version: first.version + 5, text: 'second' }, read.record);
}

/** A heartbeat of node `n` of the fleet of `prefix` under `version`. */
function beatUnder(prefix: string, version: number): Heartbeat {
  return beatOf(prefix, { fleet: 'v', version });
}

/** The answer to a batch's first ask. */
async function firstAnswer(answers: Promise<readonly DecideAnswer[]>): Promise<DecideAnswer | undefined> {
  return (await answers)[0];
}

/** Versions: the highest named is kept; decide, adjust and lease under an older one answer stale, changing nothing. */
export async function versionCase(run: ConformanceRun): Promise<void> {
  run.begin('versions');
  const rule = fixedWindow({ limit: 3, windowMs: 3_600_000, name: 'v' });
  const prefix = run.prefix();
  const under = (version: number): EngineRules => ({ prefix, rules: [rule], states: [stateName(rule)], version });
  const time = new Timeline(EPOCH + 60_000);
  const ask = { key: 'k', permits: 1, maxWaitMs: 0, peek: false } as const;
  const expectations: [string, (e: Engine, at: number) => Promise<unknown>, (answer: unknown) => boolean][] = [
    [
      'decide under version 3',
      (e, at) => firstAnswer(e.decide(under(3), atEach([ask], at))),
      (a) => !('stale' in (a as object)),
    ],
    [
      'decide under version 2',
      (e, at) => firstAnswer(e.decide(under(2), atEach([ask], at))),
      (a) => (a as { stale?: number }).stale === 3,
    ],
    [
      'adjust under version 2',
      (e, at) => e.adjust(under(2), 'k', { op: 'reset' }, at),
      (a) => (a as { stale?: number }).stale === 3,
    ],
    [
      'lease under version 2',
      (e, at) =>
        e.lease(
          under(2),
          { key: 'k', want: 1, node: 'n', liveMs: 1_000, hoardingDivisor: undefined, register: true },
          at,
        ),
      (a) => (a as { stale?: number }).stale === 3,
    ],
    [
      'decide under version 4',
      (e, at) => firstAnswer(e.decide(under(4), atEach([ask], at))),
      (a) => !('stale' in (a as object)),
    ],
    [
      'decide under version 3, after 4',
      (e, at) => firstAnswer(e.decide(under(3), atEach([ask], at))),
      (a) => (a as { stale?: number }).stale === 4,
    ],
    [
      'decide with no version',
      (e, at) =>
        firstAnswer(
          e.decide({ prefix, rules: [rule], states: [stateName(rule)] }, atEach([{ ...ask, peek: true }], at)),
        ),
      (a) => !('stale' in (a as object)),
    ],
  ];
  for (const [what, call, holds] of expectations) {
    run.next();
    const at = time.advance(10);
    const answer = await run.both(what, (e) => call(e, at));
    run.expect(holds(answer), what, 'as the versions say', answer);
  }
  // A record written makes its version the prefix's everywhere (an engine may keep versions per partition, as
  // Redis does per Cluster slot: a call raises its own, a record every one). A heartbeat is answered the
  // prefix's version, and raises it when its node decides under a newer one.
  // The record's version is above the prefix's (4): a write that did not raise it would go unseen otherwise.
  run.next();
  const written = await run.both('writeConfig', (e) => e.writeConfig(prefix, 1, { version: 5, text: 'v5' }));
  run.same('writeConfig', { written: true }, written);
  run.next();
  const behindAt = time.advance(10);
  const behind = await run.both('decide under version 4, after a record of 5', (e) =>
    firstAnswer(e.decide(under(4), atEach([ask], behindAt))),
  );
  const refused = behind !== undefined && isStale(behind) && behind.stale === 5;
  run.expect(refused, 'decide under version 4, after a record of 5', { stale: 5 }, behind);
  for (const [version, expected] of [
    [2, 5],
    [6, 6],
    [5, 6],
  ] as const) {
    run.next();
    const at = time.advance(10);
    const answer = await run.both(
      'heartbeat',
      (e) => e.heartbeat(beatUnder(prefix, version), at),
      (a) => a.version,
    );
    run.expect(answer.version === expected, `heartbeat under version ${version}: version`, expected, answer.version);
  }
  // A record written for one key (an override's change) raises the version at least where that key's states
  // live: a call on the key under the version before is stale.
  run.next();
  const forKey = await run.both('writeConfig for a key', (e) =>
    e.writeConfig(prefix, 5, { version: 7, text: 'v7' }, 'k'),
  );
  run.same('writeConfig for a key', { written: true }, forKey);
  run.next();
  const keyAt = time.advance(10);
  const keyBehind = await run.both('decide the key under version 6, after its record of 7', (e) =>
    firstAnswer(e.decide(under(6), atEach([ask], keyAt))),
  );
  const keyRefused = keyBehind !== undefined && isStale(keyBehind) && keyBehind.stale === 7;
  run.expect(keyRefused, 'decide the key under version 6, after its record of 7', { stale: 7 }, keyBehind);
  const latest = under(7);
  // Two grants (versions 3 and 4) and nothing else: the stale calls changed nothing.
  run.next();
  const at = time.advance(10);
  const peek = await run.both('decide (peek)', (e) => e.decide(latest, atEach([{ ...ask, peek: true }], at)));
  const first = peek[0];
  const remaining = first === undefined || isStale(first) ? undefined : first.decision.remaining;
  run.expect(remaining === 1, 'decide: remaining after two grants and stale calls', 1, remaining);
}
