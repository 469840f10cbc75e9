import { warnOnce } from './warnings.js';

/**
 * User callbacks (an `onDecision`, a `store-error` listener) run inside sluice's own bookkeeping: a batch
 * being answered, a health change being recorded. One that throws must not leave decisions pending or
 * reject a promise nobody awaits, so every call of one goes through here.
 *
 * Where their errors go, the one documented place: the `callback-error` event of the emitter the callback
 * belongs to (a store or a hybrid limiter), with the error and the callback's name; when nothing listens
 * there, the warning SLUICE_CALLBACK_ERROR (once per process, see warnings.ts).
 */

/** The part of an event emitter (eventemitter3 or node:events) that callback isolation needs. */
export interface CallbackEmitter {
  // `never` parameters accept any typed emitter (an event map narrows them).
  /** The listeners of an event. */
  listeners(...args: never): unknown[];
  /** Emits an event. */
  emit(...args: never): boolean;
}

type LooseEmitter = { listeners(event: string): unknown[]; emit(event: string, ...args: unknown[]): boolean };

/**
 * Hands an error thrown by the user callback `where` to its one documented place (see above).
 * @example
 * try { listener(event) } catch (error) { reportCallbackError(store, 'listener', error) }
 */
export function reportCallbackError(owner: CallbackEmitter | undefined, where: string, error: unknown): void {
  const listeners = (owner as LooseEmitter | undefined)?.listeners('callback-error') ?? [];
  let delivered = false;
  for (const listener of listeners) {
    try {
      (listener as (error: unknown, where: string) => unknown)(error, where);
      delivered = true;
    } catch {
      // A throwing callback-error listener has nowhere further to report to but the warning below.
    }
  }
  if (delivered) return;
  const detail = error instanceof Error ? (error.stack ?? error.message) : String(error);
  warnOnce('SLUICE_CALLBACK_ERROR', `a ${where} callback threw; sluice went on (decisions still resolve): ${detail}.`);
}

/**
 * Calls a user callback; what it throws is reported, never thrown into sluice's own code.
 * @example
 * callSafely(store, 'onDecision', options.onDecision, event) // a throw goes to 'callback-error'
 */
export function callSafely<A extends unknown[]>(
  owner: CallbackEmitter | undefined,
  where: string,
  fn: (...args: A) => unknown,
  ...args: A
): void {
  try {
    fn(...args);
  } catch (error) {
    reportCallbackError(owner, where, error);
  }
}

/**
 * Emits `event`; a listener that throws is reported and never reaches the code that emitted (the
 * listeners after it in that one emit are skipped, as the emitter itself does).
 * @example
 * emitSafely(this, 'store-error', error) // a throwing listener never reaches the store
 */
export function emitSafely(owner: CallbackEmitter, event: string, ...args: unknown[]): void {
  try {
    (owner as LooseEmitter).emit(event, ...args);
  } catch (error) {
    reportCallbackError(owner, `'${event}' listener`, error);
  }
}
