/**
 * What checkEngine rejects with when an engine's answer is not its reference's: the case, the seed that
 * replays it, the step, where the answers differ, what was expected and what the engine answered.
 * @example
 * try { await checkEngine(engine) } catch (e) { if (e instanceof ConformanceError) console.error(e.caseName, e.step) }
 */
export class ConformanceError extends Error {
  override readonly name: string = 'ConformanceError';

  constructor(
    /** The case that failed (`decide fixedWindow`, `lease`, ...). */
    readonly caseName: string,
    /** The seed that replays the run (`checkEngine(engine, { seed })`). */
    readonly seed: number,
    /** The step of the case, from 0. */
    readonly step: number,
    /** What differs: the call and the field (`decide: decisions[0].decision.remaining`). */
    readonly what: string,
    readonly expected: unknown,
    readonly actual: unknown,
  ) {
    super(
      `checkEngine: case ${JSON.stringify(caseName)}, seed ${seed}, step ${step}: ${what}: expected ` +
        `${show(expected)}, the engine answered ${show(actual)}`,
    );
  }
}

/** A value as a message shows it (numbers as they are: NaN, Infinity, -0). */
export function show(value: unknown): string {
  if (typeof value === 'number') return Object.is(value, -0) ? '-0' : String(value);
  if (value === undefined) return 'undefined';
  if (value instanceof Error) return `a rejection (${value.name}: ${value.message})`;
  try {
    const text = JSON.stringify(value, (_, v: unknown) =>
      typeof v === 'number' && !Number.isFinite(v) ? String(v) : v,
    );
    return text.length > 300 ? `${text.slice(0, 300)}...` : text;
  } catch {
    return String(value);
  }
}
