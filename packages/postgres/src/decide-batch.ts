import type { DecideAnswer, EngineAsk, EngineRules } from '@sluice/core/engine';

/** One decide call waiting for its turn's transaction. */
interface Waiting {
  readonly rules: EngineRules;
  readonly asks: readonly EngineAsk[];
  readonly resolve: (answers: readonly DecideAnswer[]) => void;
  readonly reject: (error: unknown) => void;
}

/** One call of a batch: its rules and asks (decided in this order, after the calls before it). */
export type BatchedCall = Pick<Waiting, 'rules' | 'asks'>;

/**
 * The decide calls of one turn of the event loop, carried together: per limiter prefix, one transaction
 * that decides every call's asks in the order they were made (exact mode asks one decision per call; two
 * transactions on one key would take its lock in whichever order their connections came, not the order the
 * requests were asked, as Redis's pipelined script calls keep it). Different prefixes share no state, and go
 * in transactions of their own.
 * @example
 * const batches = new DecideBatches((calls) => decideInOneTransaction(calls))
 * const answers = await batches.decide(rules, asks)
 */
export class DecideBatches {
  readonly #run: (calls: readonly BatchedCall[]) => Promise<readonly (readonly DecideAnswer[])[]>;
  #waiting = new Map<string, Waiting[]>();
  /** Each prefix's last transaction, which the next one of the prefix waits for. */
  readonly #tails = new Map<string, Promise<void>>();
  #scheduled = false;

  constructor(run: (calls: readonly BatchedCall[]) => Promise<readonly (readonly DecideAnswer[])[]>) {
    this.#run = run;
  }

  decide(rules: EngineRules, asks: readonly EngineAsk[]): Promise<readonly DecideAnswer[]> {
    return new Promise((resolve, reject) => {
      let calls = this.#waiting.get(rules.prefix);
      if (calls === undefined) this.#waiting.set(rules.prefix, (calls = []));
      calls.push({ rules, asks, resolve, reject });
      if (this.#scheduled) return;
      this.#scheduled = true;
      // Once the calls made in this turn (synchronously, one after another) are all here.
      queueMicrotask(() => this.#flush());
    });
  }

  #flush(): void {
    const waiting = this.#waiting;
    this.#waiting = new Map();
    this.#scheduled = false;
    for (const [prefix, calls] of waiting) {
      // One transaction of a prefix at a time, in the order of their turns: two would race for the keys'
      // locks, and a later turn's asks could be decided before an earlier one's (memoryStore decides in order).
      const before = this.#tails.get(prefix) ?? Promise.resolve();
      // Run after the one before (a rule's scope that throws on a key rejects this batch, never the process).
      const running = before.then(() => this.#run(calls));
      const tail = running.then(
        () => undefined,
        () => undefined,
      );
      this.#tails.set(prefix, tail);
      void tail.then(() => {
        if (this.#tails.get(prefix) === tail) this.#tails.delete(prefix);
      });
      running.then(
        (answers) => {
          calls.forEach((call, i) => {
            call.resolve(answers[i] ?? []);
          });
        },
        (error: unknown) => {
          for (const call of calls) call.reject(error);
        },
      );
    }
  }
}
