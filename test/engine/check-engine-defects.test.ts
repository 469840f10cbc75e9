/**
 * checkEngine must fail on a defective engine: a memory engine wrapped so that one kind of answer is wrong
 * (a permit off by one on one decision, a lease of one more, a hand-back into the wrong window, a reset that
 * keeps the lessees, a division that gives too much, a stale call obeyed, a compare-and-set that always writes,
 * a message heard too soon), each caught and named.
 */
import {
  ConformanceError,
  type Engine,
  type EngineDecision,
  checkEngine,
  isStale,
  memoryEngine,
} from '@sluice/core/engine';
import { describe, expect, it } from 'vitest';

/** A memory engine with some of its methods replaced; `inner` is the engine they may call. */
function defective(patch: (inner: Engine) => Partial<Engine>): Engine {
  const inner = memoryEngine();
  const methods: Engine = {
    name: 'defective',
    decide: (...a) => inner.decide(...a),
    adjust: (...a) => inner.adjust(...a),
    lease: (...a) => inner.lease(...a),
    heartbeat: (...a) => inner.heartbeat(...a),
    readConfig: (...a) => inner.readConfig(...a),
    writeConfig: (...a) => inner.writeConfig(...a),
    publish: (...a) => inner.publish(...a),
    subscribe: (...a) => inner.subscribe(...a),
  };
  return { ...methods, ...patch(inner) };
}

/** The decide answers with `change` made to the decision of the `nth` decide call's first ask (from 0). */
function nthDecision(
  nth: number,
  change: (answer: EngineDecision) => EngineDecision,
): (inner: Engine) => Partial<Engine> {
  return (inner) => {
    let calls = 0;
    return {
      decide: async (rules, asks) => {
        const answers = await inner.decide(rules, asks);
        const [first, ...rest] = answers;
        if (calls++ !== nth || first === undefined || isStale(first)) return answers;
        return [change(first), ...rest];
      },
    };
  };
}

async function failure(engine: Engine): Promise<ConformanceError> {
  const error = await checkEngine(engine, { seed: 7 }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ConformanceError);
  return error as ConformanceError;
}

describe('checkEngine catches a defective engine', () => {
  it('a remaining off by one on one decision', async () => {
    const error = await failure(
      defective(
        nthDecision(30, (first) => ({
          ...first,
          decision: { ...first.decision, remaining: first.decision.remaining + 1 },
        })),
      ),
    );
    expect(error.message).toMatch(
      /seed 7, step \d+: decide: \[0\]\.decision\.remaining: expected \d+, the engine answered \d+/,
    );
    expect(error.caseName).toMatch(/^decide /);
  });

  it("a rule's verdict that differs (the decision kept right)", async () => {
    const error = await failure(
      defective(
        nthDecision(40, (first) => ({
          ...first,
          verdicts: first.verdicts.map((v, i) => (i === 0 ? { ...v, resetAfterMs: v.resetAfterMs + 1 } : v)),
        })),
      ),
    );
    expect(error.what).toMatch(/verdicts\[0\]\.resetAfterMs/);
  });

  it('a ban forgotten: a rule that bans answers as if it did not', async () => {
    const error = await failure(
      defective((inner) => ({
        decide: async (rules, asks) =>
          (await inner.decide(rules, asks)).map((answer) => (isStale(answer) ? answer : { ...answer, ban: undefined })),
      })),
    );
    expect(error.what).toMatch(/ban/);
  });

  it('a lease granting one more', async () => {
    const error = await failure(
      defective((inner) => ({
        lease: async (rules, ask, at) => {
          const answer = await inner.lease(rules, ask, at);
          return isStale(answer) || answer.granted === 0 ? answer : { ...answer, granted: answer.granted + 1 };
        },
      })),
    );
    expect(error.caseName).toMatch(/^lease/);
    expect(error.what).toMatch(/granted/);
  });

  it('a refund that gives back nothing', async () => {
    const error = await failure(
      defective((inner) => ({
        adjust: (rules, key, adjustment, at) =>
          adjustment.op === 'refund'
            ? inner.adjust(rules, key, { ...adjustment, permits: 0 }, at)
            : inner.adjust(rules, key, adjustment, at),
      })),
    );
    expect(error.message).toMatch(/decide/);
  });

  it("a hand-back by the lease's time taken as unknown, and a reset that keeps the lessees", async () => {
    // Read as 'when unknown': a window takes a hand-back of the last window's lease.
    const timeless = await failure(
      defective((inner) => ({
        adjust: (rules, key, adjustment, at) =>
          adjustment.op === 'refund' && adjustment.grantedMsAgo === undefined && Number.isFinite(adjustment.grantedAtMs)
            ? inner.adjust(rules, key, { op: 'refund', permits: adjustment.permits, grantedMsAgo: Number.NaN }, at)
            : inner.adjust(rules, key, adjustment, at),
      })),
    );
    expect(timeless.caseName).toMatch(/^lease /);
    // A reset that forgets the state but not who leased it: the next lease counts a dead lessee.
    const keeping = defective((inner) => {
      const last = new Map<string, number>();
      const kept = new Map<string, number>();
      const id = (prefix: string, key: string) => `${prefix}\u0000${key}`;
      return {
        lease: async (rules, ask, at) => {
          const answer = await inner.lease(rules, ask, at);
          if (isStale(answer)) return answer;
          const lessees = Math.max(answer.lessees, kept.get(id(rules.prefix, ask.key)) ?? 0);
          last.set(id(rules.prefix, ask.key), lessees);
          return { ...answer, lessees };
        },
        adjust: async (rules, key, adjustment, at) => {
          if (adjustment.op === 'reset') kept.set(id(rules.prefix, key), last.get(id(rules.prefix, key)) ?? 0);
          return inner.adjust(rules, key, adjustment, at);
        },
      };
    });
    const kept = await failure(keeping);
    expect(kept.caseName).toBe('lease hand-back');
    expect(kept.what).toMatch(/lessees/);
  });

  it('a carry that carries nothing, or forgets to delete the earlier states', async () => {
    const idle = await failure(
      defective((inner) => ({
        adjust: (rules, key, adjustment, at) =>
          adjustment.op === 'carry' ? Promise.resolve({ freed: false }) : inner.adjust(rules, key, adjustment, at),
      })),
    );
    expect(idle.caseName).toMatch(/^carry /);
    // Carries, then brings the last earlier state back: a later carry of another rule would read it again.
    const keeping = await failure(
      defective((inner) => ({
        adjust: async (rules, key, adjustment, at) => {
          if (adjustment.op !== 'carry') return inner.adjust(rules, key, adjustment, at);
          const answer = await inner.adjust(rules, key, adjustment, at);
          // Decide the newest earlier generation again: it holds a state once more.
          const [link] = adjustment.links;
          const from = link?.from[0];
          if (from !== undefined)
            await inner.decide({ prefix: rules.prefix, rules: [from.rule], states: [from.state] }, [
              { key, permits: 1, maxWaitMs: 0, peek: false, at },
            ]);
          return answer;
        },
      })),
    );
    expect(keeping.caseName).toMatch(/^carry /);
  });

  it('a heartbeat whose allocation is too large', async () => {
    const error = await failure(
      defective((inner) => ({
        heartbeat: async (beat, at) => {
          const answer = await inner.heartbeat(beat, at);
          return answer.current === undefined ? answer : { ...answer, current: answer.current * 1.5 };
        },
      })),
    );
    expect(error.caseName).toBe('heartbeat');
    expect(error.what).toMatch(/current/);
  });

  it('an id taken that goes unnoticed', async () => {
    const error = await failure(
      defective((inner) => ({
        heartbeat: async (beat, at) => ({ ...(await inner.heartbeat(beat, at)), idTaken: false }),
      })),
    );
    expect(error.caseName).toBe('heartbeat');
  });

  it('a stale call obeyed', async () => {
    const error = await failure(
      defective((inner) => ({
        decide: (rules, asks) => inner.decide({ ...rules, version: undefined }, asks),
      })),
    );
    expect(error.caseName).toBe('versions');
  });

  it('a compare-and-set that always writes', async () => {
    const error = await failure(
      defective((inner) => ({
        writeConfig: async (prefix, expected, record) => {
          // Bad input is still the inner engine's to refuse: only the compare is defective.
          if (!Number.isInteger(expected) || expected < 1) return inner.writeConfig(prefix, expected, record);
          const read = await inner.readConfig(prefix);
          return inner.writeConfig(prefix, read.record?.version ?? 1, record);
        },
      })),
    );
    expect(error.caseName).toBe('config');
    expect(error.what).toMatch(/conflict/);
  });

  it("a configuration write that leaves the prefix's version where it was", async () => {
    // The record is kept, but calls under an older version than the record's are still obeyed: a node that
    // has not read the new configuration goes on deciding under the old one.
    const error = await failure(
      defective(() => {
        const records = memoryEngine();
        return {
          readConfig: (prefix) => records.readConfig(prefix),
          writeConfig: (prefix, expected, record) => records.writeConfig(prefix, expected, record),
        };
      }),
    );
    expect(error.caseName).toBe('versions');
  });

  it('messages delivered inside publish, or lost', async () => {
    const listeners = new Map<string, Set<(m: string) => void>>();
    const synchronous = defective((inner) => ({
      publish: async (channel, message) => {
        if (typeof message !== 'string') return inner.publish(channel, message);
        for (const listener of listeners.get(channel) ?? []) listener(message);
      },
      subscribe: async (channel, listener) => {
        if (typeof listener !== 'function') return inner.subscribe(channel, listener);
        const set = listeners.get(channel) ?? new Set();
        set.add(listener);
        listeners.set(channel, set);
        return async () => {
          set.delete(listener);
        };
      },
    }));
    expect((await failure(synchronous)).caseName).toBe('publish/subscribe');
    // Order is not promised (a Redis Cluster relays each publish through any node); a lost message is caught.
    const losing = defective((inner) => {
      let published = 0;
      return {
        publish: async (channel, message) => {
          if (typeof message !== 'string' || ++published !== 3) return inner.publish(channel, message);
        },
      };
    });
    const error = await failure(losing);
    expect(error.what).toMatch(/messages/);
  }, 20_000); // the suite waits 5 s for a message before it calls it lost

  it('a bad input thrown synchronously, or accepted', async () => {
    const throwing = defective((inner) => ({
      readConfig: (prefix) => {
        if (typeof prefix !== 'string') throw new TypeError('not a prefix');
        return inner.readConfig(prefix);
      },
    }));
    expect((await failure(throwing)).message).toMatch(/synchronous throw/);
    const lenient = defective((inner) => ({
      lease: (rules, ask, at) => inner.lease(rules, { ...ask, want: Math.max(1, ask.want) }, at),
    }));
    expect((await failure(lenient)).caseName).toBe('input');
  });
});
