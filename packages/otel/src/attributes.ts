import type { Attributes } from '@opentelemetry/api';
import type { ObservedDecision } from '@sluice/core';
import { LIMITER, OUTCOME, RULE, SHADOWED, SOURCE } from './names.js';

/**
 * The attribute set of a decision, built once per distinct set and reused: a limiter's decisions fall into a
 * handful of sets (rules x outcomes x sources), so recording allocates nothing after the first of each.
 */
export class DecisionAttributes {
  readonly #sets = new Map<string, Attributes>();

  of(event: ObservedDecision): Attributes {
    const { decision } = event;
    const shadowed = decision.shadowed === true;
    // A shadowed decision was allowed, but the rules denied it: counted as the denial it would have been.
    const outcome = decision.allowed && !shadowed ? 'allowed' : 'denied';
    const id = `${event.limiter}\u0000${decision.rule}\u0000${outcome}\u0000${event.source ?? ''}\u0000${shadowed ? 1 : 0}`;
    let attrs = this.#sets.get(id);
    if (attrs === undefined) {
      attrs = { [LIMITER]: event.limiter, [RULE]: decision.rule, [OUTCOME]: outcome };
      if (event.source !== undefined) attrs[SOURCE] = event.source;
      if (shadowed) attrs[SHADOWED] = true;
      this.#sets.set(id, attrs);
    }
    return attrs;
  }
}
