import type { Algorithm } from '../algorithms/algorithm.js';
import type { Limiter } from '../engine/limiter.js';
import { adjustPermits, checkCostNames } from '../engine/rule-costs.js';
import { type Permits, type RuleCosts, permitsOfRule } from '../engine/store.js';
import type { Decision } from '../foundation/decision.js';
import { SluiceError, SluiceRangeError, SluiceTypeError, callerNamed } from '../foundation/errors.js';

/**
 * How far past its rule's limit a settled count may go before it is taken for a mistake (a count in bytes
 * where tokens were meant): penalising it would hold the rule shut for that many of its windows.
 */
export const MAX_SETTLE_FACTOR = 100;

/** A call's admission: what it was charged, and the one correction it may get once its real cost is known. */
export interface ThrottleTicket {
  readonly key: string;
  /** What the call was charged: a count of every rule, or each rule's own. */
  readonly permits: Permits;
  /**
   * The limiter's grant. Give permits back with `settle`, which knows when the grant was asked for: a window
   * rule takes a refund back only while the window that counted the grant lasts.
   */
  readonly decision: Decision;
  /** From the call to `run` to the call's start, in ms: the queue, the rate and any pause. */
  readonly waitedMs: number;
  /** True once `settle` was called. */
  readonly settled: boolean;
  /**
   * Corrects the charge to what the call really cost (the token count the provider reported): the
   * difference is given back to, or taken from, each rule it names; a rule `actual` leaves out keeps its
   * charge. A number settles a one-rule throttle only; a policy's rules are settled by name
   * (`{ tpm: 870 }`): one number would set requests and tokens alike. A refund goes back only to the
   * window that counted the grant, while it lasts (a call settled after its window ended gives nothing back:
   * the next window did not count it). Once per ticket (a second settle is SluiceError('ALREADY_SETTLED'));
   * a number on a policy, a negative, fractional or absurd count (over MAX_SETTLE_FACTOR times its rule's
   * limit), or an unknown rule, is a typed error that changes nothing.
   */
  settle(actual: number | RuleCosts): Promise<void>;
}

/** A ticket of one started call. */
export class CallTicket implements ThrottleTicket {
  #settled = false;

  constructor(
    private readonly limiter: Limiter,
    readonly key: string,
    readonly permits: Permits,
    readonly decision: Decision,
    readonly waitedMs: number,
    /** When the grant was asked for, on the limiter's clock: a refund goes to the window that counted it. */
    private readonly askedAt: number,
  ) {}

  get settled(): boolean {
    return this.#settled;
  }

  async settle(actual: number | RuleCosts): Promise<void> {
    try {
      if (this.#settled) {
        throw new SluiceError(
          'ALREADY_SETTLED',
          `the call of ${JSON.stringify(this.key)} was settled already; a charge is corrected once`,
        );
      }
      const counted = adjustPermits(actual, 'actual');
      const rules = this.limiter.rules;
      if (typeof counted === 'number' && rules.length > 1) {
        throw new SluiceTypeError(
          'actual',
          actual,
          `actual is one number for a policy of ${rules.length} rules (${rules.map((r) => r.name).join(', ')}): ` +
            `it would set each of them to ${counted}; settle a policy by rule name ({ ${rules[rules.length - 1]?.name}: ` +
            `${counted} }). Nothing was changed`,
        );
      }
      checkCostNames(counted, rules, 'actual');
      for (const rule of rules) checkNotAbsurd(counted, rule);
      this.#settled = true;
      const back: Record<string, number> = {};
      const more: Record<string, number> = {};
      for (const rule of rules) {
        // A rule the costs leave out keeps its charge.
        if (typeof counted !== 'number' && !Object.hasOwn(counted, rule.name)) continue;
        const charged = permitsOfRule(this.permits, rule);
        const used = permitsOfRule(counted, rule);
        if (used < charged) back[rule.name] = charged - used;
        else if (used > charged) more[rule.name] = used - charged;
      }
      const adjustments: Promise<void>[] = [];
      if (Object.keys(back).length > 0)
        adjustments.push(
          this.limiter.refund(this.key, back, {
            decision: this.decision,
            grantedMsAgo: Math.max(0, this.limiter.clock.now() - this.askedAt),
          }),
        );
      if (Object.keys(more).length > 0) adjustments.push(this.limiter.penalize(this.key, more));
      await Promise.all(adjustments);
    } catch (error) {
      throw callerNamed('settle', error);
    }
  }
}

function checkNotAbsurd(counted: Permits, rule: Algorithm): void {
  const used = permitsOfRule(counted, rule);
  if (used <= rule.limit * MAX_SETTLE_FACTOR) return;
  const name = typeof counted === 'number' ? 'actual' : `actual.${rule.name}`;
  throw new SluiceRangeError(
    name,
    used,
    `${name} is ${used}, over ${MAX_SETTLE_FACTOR} times rule ${JSON.stringify(rule.name)}'s limit of ` +
      `${rule.limit}: taken for a mistake, nothing was changed`,
  );
}
