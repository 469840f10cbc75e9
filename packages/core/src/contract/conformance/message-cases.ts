/**
 * The publish/subscribe case: messages published once a subscription resolved are heard (in any order), never
 * inside publish's own call; a stopped subscription hears nothing more.
 */
import type { ConformanceRun } from './conformance-run.js';

/** How long a message may take to arrive before the engine is taken to have lost it. */
const DELIVERY_MS = 5_000;

/** Collects a channel's messages and waits for a count of them (never longer than DELIVERY_MS). */
class Inbox {
  readonly messages: string[] = [];
  /** A message heard while publish was still running (it must be asynchronous). */
  heardInsidePublish = false;
  #waiting: { count: number; resolve: () => void } | undefined;

  constructor(private readonly publishing: () => boolean) {}

  readonly listener = (message: string): void => {
    if (this.publishing()) this.heardInsidePublish = true;
    this.messages.push(message);
    if (this.#waiting !== undefined && this.messages.length >= this.#waiting.count) this.#waiting.resolve();
  };

  /** Resolves true once `count` messages arrived, false after DELIVERY_MS. */
  until(count: number): Promise<boolean> {
    if (this.messages.length >= count) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), DELIVERY_MS);
      this.#waiting = {
        count,
        resolve: () => {
          clearTimeout(timer);
          resolve(true);
        },
      };
    });
  }
}

export async function messageCase(run: ConformanceRun): Promise<void> {
  run.begin('publish/subscribe');
  const channel = `${run.prefix()}:channel`;
  let publishing = false;
  const first = new Inbox(() => publishing);
  const second = new Inbox(() => publishing);
  run.next();
  const stopFirst = await run.answer('subscribe', (e) => e.subscribe(channel, first.listener));
  const sent = ['one', 'two', 'three', '', 'five'];
  for (const message of sent) {
    run.next();
    publishing = true;
    const published = run.answer('publish', (e) => e.publish(channel, message));
    publishing = false;
    await published;
  }
  run.expect(await first.until(sent.length), 'publish: messages heard', sent.length, first.messages.length);
  // Order is not part of the contract: a Redis Cluster relays each publish through whichever node took it.
  run.same('subscribe: the messages published', [...sent].sort(), [...first.messages].sort());
  run.expect(!first.heardInsidePublish, 'publish: delivery', 'after publish returned', 'inside publish');
  run.next();
  await run.answer('stop', () => stopFirst());
  const stopSecond = await run.answer('subscribe', (e) => e.subscribe(channel, second.listener));
  await run.answer('publish', (e) => e.publish(channel, 'after'));
  // Heard by the subscription still listening: the stopped one, which would have heard it first, did not.
  run.expect(await second.until(1), 'publish: messages heard', 1, second.messages.length);
  run.same('subscribe: messages after stopping', [...sent].sort(), [...first.messages].sort());
  await run.answer('stop', () => stopSecond());
}
