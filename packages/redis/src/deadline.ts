/**
 * The default per-decision deadline of every Redis-backed store (exact, leased, divided's heartbeats, the
 * semaphore). Chosen from measurement (bench/src/deadline.bench.ts, 2 cores): exact decisions on a healthy
 * local Redis never took longer than 17 ms with three busy loops per core beside them (p99.99 16 ms over
 * 230,000 decisions), so 50 ms is three times the worst seen; a stall of this process does not count against
 * it (see withDeadline).
 */
export const DEFAULT_TIMEOUT_MS = 50;

/**
 * A Redis call that missed its deadline: the store treats it as a failed call.
 * @example
 * try { await withDeadline(call, 50, 'a decision') } catch (e) { if (e instanceof DeadlineError) health.reportFailure(e) }
 */
export class DeadlineError extends Error {
  override readonly name = 'DeadlineError';
}

/**
 * Waits for `promise` at most `ms`, then rejects with a DeadlineError naming `what`. The call itself goes
 * on (a Redis client cannot take a command back); its late answer is ignored here.
 *
 * When the deadline's timer fires, the answer is given one more turn of the event loop's I/O: after a stall
 * of this process (a long GC pause, synchronous work), timers run before the socket that holds Redis's answer
 * is read, so a healthy Redis would otherwise be counted late for this process's own pause.
 * @example
 * const reply = await withDeadline(connection.runScript(script, keys, args), 50, 'a decision')
 */
export function withDeadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const late = (): void => reject(new DeadlineError(`${what}: Redis did not answer within ${ms} ms`));
    const timer = setTimeout(() => setImmediate(late), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
