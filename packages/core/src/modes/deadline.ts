/**
 * The default per-decision deadline of every engine-backed store (exact, leased, divided's heartbeats, the
 * semaphore). Chosen from measurement (bench/src/deadline.bench.ts, 2 cores): exact decisions on a healthy
 * local Redis never took longer than 17 ms with three busy loops per core beside them (p99.99 16 ms over
 * 230,000 decisions), so 50 ms is three times the worst seen; a stall of this process does not count against
 * it (see withDeadline).
 */
export const DEFAULT_TIMEOUT_MS = 50;

/**
 * The least deadline of a call that is never on a decision's path (an access-list change or read, a
 * limited-keys flush or read): a change of 10,000 entries or a read of 100,000 takes a central store (Redis)
 * far longer than a decision's timeoutMs.
 */
export const OPERATIONS_DEADLINE_MS = 5_000;

/**
 * A call to the central store that missed its deadline: the store treats it as a failed call.
 * @example
 * try { await withDeadline(call, 50, 'a decision') } catch (e) { if (e instanceof DeadlineError) health.reportFailure(e) }
 */
export class DeadlineError extends Error {
  override readonly name = 'DeadlineError';
}

/** A deadline's timer that fires later than this past its time (at least LATE_FLOOR_MS) found this process late. */
const LATE_FRACTION = 0.25;
const LATE_FLOOR_MS = 5;

/** However late this process runs, a call fails once its deadline has been extended this many times. */
const MAX_EXTENSIONS = 3;

type Immediate = (fn: () => void) => unknown;
/**
 * Runs `fn` after the I/O of this turn of the event loop: Node's setImmediate (timers run before sockets are
 * read, so a late answer sitting in one is read first); a runtime without it gets the next macrotask.
 */
export const afterIo: Immediate =
  (globalThis as { setImmediate?: Immediate }).setImmediate ?? ((fn: () => void) => setTimeout(fn, 0));

let extended = 0;
let missed = 0;

/**
 * Deadlines this process has extended because its own event loop was late (a busy or stalled process, not a
 * slow central store), and deadlines missed (counted as the store's failures), since it started: what a fleet
 * simulator or an operator reads to tell client overload from trouble in the central store (Redis).
 * @example
 * const { extended, missed } = deadlineCounts() // extended grew: this process ran late, the central store did not
 */
export function deadlineCounts(): { readonly extended: number; readonly missed: number } {
  return { extended, missed };
}

/**
 * Waits for `promise` at most `ms`, then rejects with a DeadlineError naming `what`. The call itself goes
 * on (a client cannot take a command back); its late answer is ignored here.
 *
 * The deadline measures the central store, not this process. When its timer fires late (by more than a
 * quarter of the deadline), this process's event loop was busy or stalled (synchronous work, a GC pause, a
 * CPU-starved container) and the store's answer may sit unread in the socket: the wait goes on for another
 * deadline (at most MAX_EXTENSIONS times), so an overloaded node neither reports the store failing nor falls
 * into its fail mode. And when it fires, the answer is given one more turn of the event loop's I/O (timers run
 * before sockets are read).
 * @example
 * const reply = await withDeadline(connection.runScript(script, keys, args), 50, 'a decision')
 */
export function withDeadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const slack = Math.max(LATE_FLOOR_MS, ms * LATE_FRACTION);
    let due = performance.now() + ms;
    let extensions = 0;
    let settled = false;
    const late = (): void => {
      // The message names Redis, the one engine so far (test/redis/deadline.test.ts reads it).
      if (settled) return;
      missed++;
      reject(new DeadlineError(`${what}: Redis did not answer within ${ms} ms`));
    };
    const check = (): void => {
      const now = performance.now();
      if (now - due > slack && extensions < MAX_EXTENSIONS) {
        extensions++;
        extended++;
        due = now + ms;
        timer = setTimeout(check, ms);
        return;
      }
      afterIo(late);
    };
    let timer = setTimeout(check, ms);
    promise.then(
      (value) => {
        settled = true;
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        settled = true;
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
