import type { Algorithm } from '../algorithms/algorithm.js';
import type { Limiter } from '../engine/limiter-types.js';
import { adjustPermits, checkPermitNames } from '../engine/rule-permits.js';
import { type Permits, type RulePermits, permitsOfRule } from '../engine/store.js';
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
  /** True once a `settle` landed (one that failed leaves it false). */
  readonly settled: boolean;
  /**
   * Corrects the charge to what the call really cost (the token count the provider reported): the
   * difference is given back to, or taken from, each rule it names; a rule `actual` leaves out keeps its
   * charge. A number settles a one-rule throttle only; a policy's rules are settled by name
   * (`{ tpm: 870 }`): one number would set requests and tokens alike. A refund goes back only to the
   * window that counted the grant, while it lasts (a call settled after its window ended gives nothing back:
   * the next window did not count it). Once per ticket (a second settle is SluiceError('ALREADY_SETTLED'));
   * a number on a policy, a negative, fractional or absurd count (over MAX_SETTLE_FACTOR times its rule's
   * limit), or an unknown rule, is a typed error that changes nothing. A settle the limiter could not apply
   * (closed, its store away) rejects and leaves the ticket unsettled: call it again. A settle called while
   * another is under way waits for it: ALREADY_SETTLED if that one landed, else it is tried in its turn.
   */
  settle(actual: number | RulePermits): Promise<void>;
}

/** A ticket of one started call. */
export class CallTicket implements ThrottleTicket {
  #settled = false;
  /** The settle under way: another waits for it, so a correction is applied once. */
  #settling: Promise<void> | undefined;
  /**
   * What the key's rules hold of this call now: the charge, less what a settle that failed halfway already
   * gave back or took (a refund and a penalty are two store calls), so a retry applies only the rest.
   */
  #held: Permits;

  constructor(
    private readonly limiter: Limiter,
    readonly key: string,
    readonly permits: Permits,
    readonly decision: Decision,
    readonly waitedMs: number,
    /** When the grant was asked for, on the limiter's clock: a refund goes to the window that counted it. */
    private readonly askedAt: number,
  ) {
    this.#held = permits;
  }

  get settled(): boolean {
    return this.#settled;
  }

  async settle(actual: number | RulePermits): Promise<void> {
    try {
      while (this.#settling !== undefined) await this.#settling.catch(() => undefined);
      if (this.#settled) {
        throw new SluiceError(
          'ALREADY_SETTLED',
          `the call of ${JSON.stringify(this.key)} was settled already; a charge is corrected once`,
        );
      }
      const settling = this.#apply(actual);
      this.#settling = settling;
      try {
        await settling;
      } finally {
        this.#settling = undefined;
      }
    } catch (error) {
      throw callerNamed('settle', error);
    }
  }

  /** Checks `actual`, then gives back or takes the difference; settled only once every part landed. */
  async #apply(actual: number | RulePermits): Promise<void> {
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
    checkPermitNames(counted, rules, 'actual');
    for (const rule of rules) checkNotAbsurd(counted, rule);
    const back: Record<string, number> = {};
    const more: Record<string, number> = {};
    for (const rule of rules) {
      // A rule `actual` leaves out keeps its charge.
      if (typeof counted !== 'number' && !Object.hasOwn(counted, rule.name)) continue;
      const held = permitsOfRule(this.#held, rule);
      const used = permitsOfRule(counted, rule);
      if (used < held) back[rule.name] = held - used;
      else if (used > held) more[rule.name] = used - held;
    }
    const parts: Array<[Record<string, number>, Promise<void>]> = [];
    if (Object.keys(back).length > 0)
      parts.push([
        back,
        this.limiter.refund(this.key, back, {
          decision: this.decision,
          grantedMsAgo: Math.max(0, this.limiter.clock.now() - this.askedAt),
        }),
      ]);
    if (Object.keys(more).length > 0) parts.push([more, this.limiter.penalize(this.key, more)]);
    const outcomes = await Promise.allSettled(parts.map(([, done]) => done));
    // A store that did not answer may still apply the call (Redis runs it when it is free again). A refund
    // that may have landed counts as landed: giving it again could grant past the limit, losing it only holds
    // the permits until their window ends. A penalty that may have landed is tried again: charged twice at worst.
    const mayHaveLanded = (i: number) => parts[i]?.[0] === back && mayHaveRun(outcomes[i]);
    const landed = parts
      .filter((_, i) => outcomes[i]?.status === 'fulfilled' || mayHaveLanded(i))
      .map(([changed]) => changed);
    if (landed.length > 0) {
      const moved = (rule: Algorithm) => landed.some((changed) => Object.hasOwn(changed, rule.name));
      this.#held = Object.fromEntries(
        rules.map((rule) => [rule.name, permitsOfRule(moved(rule) ? counted : this.#held, rule)]),
      );
    }
    const failed = outcomes.find((outcome, i) => outcome.status === 'rejected' && !mayHaveLanded(i));
    if (failed !== undefined) throw (failed as PromiseRejectedResult).reason;
    this.#settled = true;
    const uncertain = outcomes.find((outcome) => outcome.status === 'rejected');
    if (uncertain !== undefined)
      throw new SluiceError(
        'STORE_UNAVAILABLE',
        `the store did not answer the refund of ${JSON.stringify(this.key)}, which may still land: the ticket is ` +
          'settled, and the refund is not given again',
        { cause: (uncertain as PromiseRejectedResult).reason },
      );
  }
}

/** A store call that failed without an answer (STORE_UNAVAILABLE): the store may still have applied it. */
function mayHaveRun(outcome: PromiseSettledResult<void> | undefined): boolean {
  return (
    outcome?.status === 'rejected' &&
    outcome.reason instanceof SluiceError &&
    outcome.reason.code === 'STORE_UNAVAILABLE'
  );
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
