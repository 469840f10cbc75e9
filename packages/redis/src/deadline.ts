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
 * @example
 * const reply = await withDeadline(connection.runScript(script, keys, args), 50, 'a decision')
 */
export function withDeadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new DeadlineError(`${what}: Redis did not answer within ${ms} ms`)), ms);
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
