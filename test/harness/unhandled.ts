/**
 * The rejections nobody handled while `body` ran: what a test asserts is empty when a failure path (a key
 * function that throws, a store closed mid-resubscribe) must end in the framework's error path, not in an
 * unhandled rejection. Waits two turns after `body`, since an unhandled rejection is reported after the
 * microtasks of the turn it happened in.
 * @example
 * expect(await unhandledDuring(async () => { await callThatFails() })).toEqual([])
 */
export async function unhandledDuring(body: () => Promise<void>): Promise<unknown[]> {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  try {
    await body();
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
  } finally {
    process.off('unhandledRejection', onUnhandled);
  }
  return unhandled;
}
