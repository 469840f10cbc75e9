import { type DeadlineError, afterIo, withDeadline } from './deadline.js';

/** The calls started in one turn of the event loop, waited for together. */
class Turn<T> {
  readonly pending = new Set<T>();
  /** True until the turn's I/O is read: calls started until then join this turn. */
  open = true;
  /** Ends the shared wait (every call answered): its timer is cleared. */
  done!: () => void;
}

/**
 * One deadline (withDeadline's, with its allowance for a late event loop) shared by every call started in the
 * same turn of the event loop: exact mode sends each decision as its own engine call, and a timer and a promise
 * per decision cost more than the decision's own work on the client. A call answered in time leaves its turn;
 * the calls of a turn still out when the deadline passes are told `late`, each once.
 * @example
 * const deadlines = new TurnDeadlines<Call>(50, 'a decision', (call, error) => call.fail(error))
 * const turn = deadlines.start(call)
 * call.promise.then(() => { if (deadlines.answered(turn, call)) use(call) })
 */
export class TurnDeadlines<T> {
  readonly #ms: number;
  readonly #what: string;
  readonly #late: (item: T, error: DeadlineError) => void;
  #turn: Turn<T> | undefined;

  constructor(ms: number, what: string, late: (item: T, error: DeadlineError) => void) {
    this.#ms = ms;
    this.#what = what;
    this.#late = late;
  }

  /** Starts waiting for `item` under this turn's deadline; returns the turn, for `answered`. */
  start(item: T): Turn<T> {
    let turn = this.#turn;
    if (turn === undefined) {
      const made = new Turn<T>();
      turn = made;
      this.#turn = made;
      const waited = new Promise<void>((resolve) => {
        made.done = resolve;
      });
      afterIo(() => {
        made.open = false;
        if (this.#turn === made) this.#turn = undefined;
        if (made.pending.size === 0) made.done();
      });
      withDeadline(waited, this.#ms, this.#what).catch((error: DeadlineError) => {
        const late = [...made.pending];
        made.pending.clear();
        for (const item of late) this.#late(item, error);
      });
    }
    turn.pending.add(item);
    return turn;
  }

  /** `item`'s answer came: true when in time (it leaves its turn), false when it was already told late. */
  answered(turn: Turn<T>, item: T): boolean {
    if (!turn.pending.delete(item)) return false;
    if (turn.pending.size === 0 && !turn.open) turn.done();
    return true;
  }
}

export type { Turn };
