/**
 * One run of the conformance suite: the engine under test, its reference (a memory engine, deciding at the
 * same times), the seed, the case and step a failure names, and the timeline the calls are made at.
 */
import { systemClock } from '../../foundation/clock.js';
import type { Engine } from '../engine.js';
import { ConformanceError } from './conformance-error.js';
import type { Prng } from './prng.js';
import { firstDifference } from './same-answer.js';

/**
 * A case's times: each step later by what the case asks, and never less than the real time gone by since the
 * case began. Why: an engine expires what stops mattering on its own clock (a backend's keys, by TTL), so a
 * timeline slower than real time would see a state expire before it stopped mattering at the caller's `at`.
 */
export class Timeline {
  #at: number;
  readonly #start: number;
  readonly #realStart = systemClock.now();

  constructor(start: number) {
    this.#at = start;
    this.#start = start;
  }

  get at(): number {
    return this.#at;
  }

  /** Moves on by `ms` (at least the real time gone by since the start) and returns the new time. */
  advance(ms: number): number {
    const real = Math.ceil(systemClock.now() - this.#realStart);
    this.#at = Math.max(this.#at + ms, this.#start + real);
    return this.#at;
  }
}

/** What a case is given. */
export class ConformanceRun {
  caseName = '';
  step = 0;
  /** Steps of every case so far. */
  steps = 0;
  cases = 0;
  #prefixes = 0;

  constructor(
    readonly engine: Engine,
    readonly reference: Engine,
    readonly seed: number,
    /** Random steps of a random case. */
    readonly stepsPerCase: number,
    readonly rng: Prng,
    readonly runPrefix: string,
    /** What the engine under test promises beyond the contract's minimum (see CheckEngineOptions). */
    readonly promises: { readonly sharedIdentities: boolean },
  ) {}

  /** Starts a case: its name in failures, its own generator. */
  begin(name: string): Prng {
    this.caseName = name;
    this.step = 0;
    this.cases++;
    return this.rng.fork(this.cases);
  }

  /** Moves to the case's next step. */
  next(): void {
    this.step++;
    this.steps++;
  }

  /** A prefix no other case and no other run uses. */
  prefix(): string {
    return `${this.runPrefix}:${++this.#prefixes}`;
  }

  fail(what: string, expected: unknown, actual: unknown): never {
    throw new ConformanceError(this.caseName, this.seed, this.step, what, expected, actual);
  }

  /** Fails unless `condition` holds. */
  expect(condition: boolean, what: string, expected: unknown, actual: unknown): void {
    if (!condition) this.fail(what, expected, actual);
  }

  /** Fails unless `actual` is `expected`, field by field (see firstDifference). */
  same(what: string, expected: unknown, actual: unknown): void {
    const d = firstDifference(expected, actual);
    if (d !== undefined) this.fail(d.path === '' ? what : `${what}: ${d.path}`, d.expected, d.actual);
  }

  /** The engine's answer to `call`, or a failure naming `what` when it rejects. */
  async answer<T>(what: string, call: (engine: Engine) => Promise<T>): Promise<T> {
    try {
      return await call(this.engine);
    } catch (error) {
      return this.fail(what, 'an answer', error);
    }
  }

  /**
   * Makes `call` on the engine and the reference and fails unless their answers are the same (`strip` leaves
   * out what may differ: the engine's own clock); the engine's answer. Either rejecting fails.
   */
  async both<T>(
    what: string,
    call: (engine: Engine) => Promise<T>,
    strip: (answer: T) => unknown = (a) => a,
  ): Promise<T> {
    const expected = await settle(call(this.reference));
    const actual = await settle(call(this.engine));
    if (!expected.ok || !actual.ok)
      return this.fail(
        what,
        expected.ok ? strip(expected.value) : expected.error,
        actual.ok ? strip(actual.value) : actual.error,
      );
    this.same(what, strip(expected.value), strip(actual.value));
    return actual.value;
  }
}

type Settled<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: unknown };

async function settle<T>(promise: Promise<T>): Promise<Settled<T>> {
  try {
    return { ok: true, value: await promise };
  } catch (error) {
    return { ok: false, error };
  }
}
