/**
 * A fake provider for the throttle's fetch tests: its first request is held until the test answers it (a 429,
 * say); every later one is answered 200 at once. `started` records each request as 'r', beside whatever the
 * test pushes for its own calls, so the order calls began in can be asserted.
 */
export interface HeldProvider {
  /** A fetch to give the throttle. */
  readonly fetch: () => Promise<Response>;
  /** Each request's 'r' (and the test's own marks), in the order they began. */
  readonly started: string[];
  /** Resolves once the first request was sent. */
  readonly firstSent: Promise<void>;
  /** Answers the first request. */
  answerFirst(response: Response): void;
}

export function heldProvider(): HeldProvider {
  const started: string[] = [];
  let answer: (response: Response) => void = () => {};
  let sent: () => void = () => {};
  const firstSent = new Promise<void>((resolve) => {
    sent = resolve;
  });
  const fetch = (): Promise<Response> => {
    started.push('r');
    if (started.filter((mark) => mark === 'r').length > 1) return Promise.resolve(new Response('ok'));
    sent();
    return new Promise<Response>((resolve) => {
      answer = resolve;
    });
  };
  return { fetch, started, firstSent, answerFirst: (response) => answer(response) };
}
