import type { Attributes, ObservableResult } from '@opentelemetry/api';
import type { ObservedDecision } from '@sluice/core';
import { LIMITER, OUTCOME, RULE, SHADOWED, SOURCE } from './names.js';

/** One attribute set of `sluice.decisions` and how many decisions it has counted. */
export interface DecisionSeries {
  readonly attributes: Attributes;
  count: number;
}

/**
 * The series of decisions, one per distinct attribute set, built once and reused: a limiter's decisions
 * fall into a handful of sets (rules x outcomes x sources), so counting allocates nothing after the first
 * of each.
 */
export class DecisionSeriesTable {
  readonly #series = new Map<string, DecisionSeries>();

  /** Every series counted so far. */
  all(): IterableIterator<DecisionSeries> {
    return this.#series.values();
  }

  of(event: ObservedDecision): DecisionSeries {
    const { decision } = event;
    const shadowed = decision.shadowed === true;
    // A shadowed decision was allowed, but the rules denied it: counted as the denial it would have been.
    const outcome = decision.allowed && !shadowed ? 'allowed' : 'denied';
    const id = `${event.limiter}\u0000${decision.rule}\u0000${outcome}\u0000${event.source ?? ''}\u0000${shadowed ? 1 : 0}`;
    let series = this.#series.get(id);
    if (series === undefined) {
      const attributes: Attributes = { [LIMITER]: event.limiter, [RULE]: decision.rule, [OUTCOME]: outcome };
      if (event.source !== undefined) attributes[SOURCE] = event.source;
      if (shadowed) attributes[SHADOWED] = true;
      series = { attributes, count: 0 };
      this.#series.set(id, series);
    }
    return series;
  }
}

/**
 * Counts by attribute set, for an asynchronous counter: each set is built once, on its first count (by
 * `attributes()`), and only counted after, so counting allocates nothing once a set exists.
 * @example
 * const leased = new CountTable()
 * leased.add(prefix, () => ({ 'sluice.limiter': prefix }), permits)
 * counter.addCallback(leased.observe)
 */
export class CountTable {
  readonly #counts = new Map<string, { readonly attributes: Attributes; count: number }>();

  add(id: string, attributes: () => Attributes, n = 1): void {
    let entry = this.#counts.get(id);
    if (entry === undefined) this.#counts.set(id, (entry = { attributes: attributes(), count: 0 }));
    entry.count += n;
  }

  readonly observe = (result: ObservableResult): void => {
    for (const entry of this.#counts.values()) result.observe(entry.count, entry.attributes);
  };
}
