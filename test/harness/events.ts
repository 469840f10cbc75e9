/** Anything with `once`/`on`/`off`: node's EventEmitter, eventemitter3's (typed or not). */
interface Emitter {
  on: (...args: never[]) => unknown;
  off: (...args: never[]) => unknown;
}

type Listener<A extends unknown[]> = (...args: A) => void;

/**
 * What a test waits on: the next time `emitter` emits `event` with arguments `accept` takes (any, when not
 * given), resolved with those arguments.
 */
export function nextEvent<A extends unknown[] = unknown[]>(
  emitter: Emitter,
  event: string,
  accept: (...args: A) => boolean = () => true,
): Promise<A> {
  const on = emitter.on as (event: string, listener: Listener<A>) => unknown;
  const off = emitter.off as (event: string, listener: Listener<A>) => unknown;
  return new Promise((resolve) => {
    const listener = (...args: A): void => {
      if (!accept(...args)) return;
      off.call(emitter, event, listener);
      resolve(args);
    };
    on.call(emitter, event, listener);
  });
}

/**
 * Waits until `condition()` holds, checking after each turn of the event loop: for state the code exposes
 * (a queue's depth) rather than an event, with no fixed sleep standing for it. Fails after `limitMs`,
 * naming `what`.
 */
export async function until(condition: () => boolean, what: string, limitMs = 10_000): Promise<void> {
  const started = performance.now();
  while (!condition()) {
    if (performance.now() - started > limitMs) throw new Error(`${what}: not within ${limitMs} ms`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/**
 * Waits until `check()` resolves true, asking again after each answer: for state only a server can tell
 * (who is subscribed to a channel). Fails after `limitMs`, naming `what`.
 */
export async function untilAsync(check: () => Promise<boolean>, what: string, limitMs = 10_000): Promise<void> {
  const started = performance.now();
  while (!(await check())) {
    if (performance.now() - started > limitMs) throw new Error(`${what}: not within ${limitMs} ms`);
  }
}
