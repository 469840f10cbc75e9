/**
 * Calls `fn` every `ms` until the returned stop is called, the first time after a random share of `ms`
 * (between half and all of it): nodes started together (a deploy, a test's fleet) do not all call Redis in
 * the same instant. The timers never keep a process alive (Node's unref, where the runtime has it): a
 * limiter's background reads and flushes end with the program.
 * @example
 * const stop = repeat(() => void flush(), 5_000)
 * stop()
 */
export function repeat(fn: () => void, ms: number): () => void {
  let interval: ReturnType<typeof setInterval> | undefined;
  const first = setTimeout(
    () => {
      fn();
      interval = setInterval(fn, ms);
      unref(interval);
    },
    ms * (0.5 + Math.random() / 2),
  );
  unref(first);
  return () => {
    clearTimeout(first);
    clearInterval(interval);
  };
}

const unref = (timer: unknown): void => (timer as { unref?: () => void }).unref?.();
