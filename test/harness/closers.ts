import { afterEach } from 'vitest';

/**
 * What a test opened (servers, limiters, stores, clients) closed after each test, last opened first, so a
 * failed assertion leaves nothing running. Push a function that closes one thing.
 * @example
 * const closers = closeAfterEach()
 * closers.push(() => limiter.close(), () => server.close())
 */
export function closeAfterEach(): Array<() => unknown> {
  const closers: Array<() => unknown> = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });
  return closers;
}
