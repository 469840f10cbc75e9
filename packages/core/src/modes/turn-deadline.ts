import { type DeadlineError, afterIo, withDeadline } from './deadline.js';

/** The calls started in one turn of the event loop, waited for together. */
class Turn<T> {
  /** Every call started in the turn; those still waited for carry the turn (see Waited). */
  readonly started: T[] = [];
  /** How many of them are still waited for. */
  left = 0;
  /** True until the turn's I/O is read: calls started until then join this turn. */
  open = true;
  /** performance.now() at its first call: a call joins it only while a quarter of the deadline has not passed. */
  readonly startedAt = performance.now();
  /** Ends the shared wait (every call answered): its timer is cleared. */
  done!: () => void;
}

/** A call waited for under a turn's deadline: it carries its turn until answered or told late. */
export interface Waited {
  deadlineTurn: unknown;
}

/**
 * One deadline (withDeadline's, with its allowance for a late event loop) shared by every call started in the
 * same turn of the event loop: exact mode sends each decision as its own engine call, and a timer and a promise
 * per decision cost more than the decision's own work on the client (a turn that runs past a quarter of the
 * deadline is cut there, so no call's deadline is shorter by more). A call answered in time leaves its turn;
 * the calls of a turn still out when the deadline passes are told `late`, each once.
 * @example
 * const deadlines = new TurnDeadlines<Call>(50, 'a decision', (call, error) => call.fail(error))
 * deadlines.start(call)
 * call.promise.then(() => { if (deadlines.answered(call)) use(call) })
 */
export class TurnDeadlines<T extends Waited> {
  readonly #ms: number;
  readonly #what: string;
  readonly #late: (item: T, error: DeadlineError) => void;
  #turn: Turn<T> | undefined;

  constructor(ms: number, what: string, late: (item: T, error: DeadlineError) => void) {
    this.#ms = ms;
    this.#what = what;
    this.#late = late;
  }

  /** Starts waiting for `item` under this turn's deadline. */
  start(item: T): void {
    let turn = this.#turn;
    // A long turn of the event loop (a busy poll phase) is cut: a call joining late would get a shorter deadline.
    if (turn !== undefined && performance.now() - turn.startedAt > this.#ms / 4) {
      turn.open = false;
      if (turn.left === 0) turn.done();
      turn = undefined;
      this.#turn = undefined;
    }
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
        if (made.left === 0) made.done();
      });
      withDeadline(waited, this.#ms, this.#what).then(
        () => {
          made.started.length = 0;
        },
        (error: DeadlineError) => {
          const late = made.started.filter((started) => started.deadlineTurn === made);
          made.started.length = 0;
          made.left = 0;
          for (const item of late) item.deadlineTurn = undefined;
          for (const item of late) this.#late(item, error);
        },
      );
    }
    item.deadlineTurn = turn;
    turn.started.push(item);
    turn.left++;
  }

  /** `item`'s answer came: true when in time (it leaves its turn), false when it was already told late. */
  answered(item: T): boolean {
    const turn = item.deadlineTurn as Turn<T> | undefined;
    if (turn === undefined) return false;
    item.deadlineTurn = undefined;
    if (--turn.left === 0 && !turn.open) turn.done();
    return true;
  }
}
