import type { Algorithm } from '../algorithms/algorithm.js';
import { SluiceRangeError } from '../foundation/errors.js';

/** What a rule is, for telling two limiters' rules apart: its name, algorithm, parameters and scope. */
function describeRules(rules: readonly Algorithm[]): string {
  return rules
    .map((r) => {
      const whose =
        r.scope === undefined ? '' : typeof r.scope === 'string' ? ` scope=${r.scope}` : ' scope=(function)';
      const params = Object.entries(r.params)
        .map(([k, v]) => `${k}=${v}`)
        .join(',');
      return `${r.name}:${r.kind}(${params})${whose}`;
    })
    .join(' + ');
}

/**
 * Refuses a second limiter on the same prefix of one store with different rules: they would read each
 * other's state as their own (a fixed window's count as a token bucket's tokens). Limiters with the same
 * rules may share a prefix; that is how several instances of one limiter share their keys.
 * @example
 * const guard = new PrefixGuard()
 * const release = guard.claim(ruleSet.prefix, ruleSet.rules) // throws for other rules on a claimed prefix
 * // on unbind: release()
 */
export class PrefixGuard {
  /** Per prefix: the rules that hold it and how many bindings do. */
  readonly #claims = new Map<string, { rules: string; holders: number }>();

  /** Claims `prefix` for `rules`; returns the release, which frees the prefix once every holder released it. */
  claim(prefix: string, rules: readonly Algorithm[]): () => void {
    const rulesText = describeRules(rules);
    const held = this.#claims.get(prefix);
    if (held === undefined) this.#claims.set(prefix, { rules: rulesText, holders: 1 });
    else if (held.rules === rulesText) held.holders++;
    else {
      throw new SluiceRangeError(
        'prefix',
        prefix,
        `prefix ${JSON.stringify(prefix)} is already used in this store by a limiter with other rules ` +
          `(${held.rules}); this one has ${rulesText}. Give each limiter its own prefix, or close the other ` +
          `limiter first.`,
      );
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const claim = this.#claims.get(prefix);
      if (claim !== undefined && --claim.holders === 0) this.#claims.delete(prefix);
    };
  }
}
