import { withDeadline } from './deadline.js';

/**
 * How soon a failing store first probes its engine (and nudges a client waiting out its reconnect backoff);
 * each probe that fails doubles the wait, up to MAX_PROBE_INTERVAL_MS.
 */
export const PROBE_INTERVAL_MS = 100;

/**
 * The longest wait between two probes of a failing store: a long outage costs two probes a second, not ten
 * (each failed command is a log line for clients that log them, such as GLIDE), and the store is back within
 * this long of its engine (at once for a client that says it reconnected).
 */
export const MAX_PROBE_INTERVAL_MS = 500;

/**
 * The client an engine talks through, as its health machine watches it: whether it is connected, a nudge to
 * reconnect now, and its errors and reconnections.
 */
export interface EngineLink {
  /** False while the client knows it is not connected (a command now would only wait in its queue). */
  readonly connected: boolean;
  /** Asks a client waiting out its reconnect backoff to connect now (never a second reconnect loop). */
  nudgeReconnect(): void;
  /** Calls `onError` at each client error and `onReady` at each (re)connection; returns the stop. */
  watch(onError: (error: Error) => void, onReady: () => void): () => void;
}

/** What an engine gives its health machine: the client it watches, its probe, and which errors are one key's. */
export interface HealthProbe {
  readonly link: EngineLink;
  /** A cheap read of `key`, routed where `key` lives (on a sharded engine, the shard that failed). */
  readonly probe: (key: string) => Promise<unknown>;
  /**
   * Whether `error` is the engine's answer about one key alone (a wrong type, a script error on its state):
   * the engine is there, so it leaves the store healthy.
   */
  readonly isKeyScoped: (error: unknown) => boolean;
}

/** What an EngineHealth watches and whom it tells. */
export interface HealthOptions extends HealthProbe {
  /** How long a probe may take before it counts as failed. */
  readonly timeoutMs: number;
  /** Called on each change: false with the error that started a failure, true when the engine answers again. */
  readonly onChange: (healthy: boolean, error?: Error) => void;
}

/**
 * Whether a store's engine is answering: healthy until a call fails, then failing until the store's own
 * probe (the engine's probe of a key where the last failure happened; decisions never serve as probes, so
 * during an outage every decision is answered by the fail mode at once; PROBE_INTERVAL_MS after the failure,
 * then at doubling intervals up to MAX_PROBE_INTERVAL_MS, on host timers: an outage is a wall-clock event,
 * whatever clock the decisions use) is answered. While it fails, a client waiting out its reconnect backoff is
 * asked to connect now (never a second reconnect loop; see EngineLink.nudgeReconnect), so the store is back
 * within about one probe interval of its engine, and the number of connection attempts is the client's own
 * schedule plus at most one per probe interval, whatever the traffic.
 *
 * It also listens to the client's 'error' and 'ready' events, for as long as the store is open: a client
 * error is a failure it acts on (and a client with an error listener does not print "Unhandled error event"
 * on every failed reconnect), and a client that just connected is probed at once.
 * @example
 * const health = new EngineHealth({ ...probe, timeoutMs: 50, onChange: (ok) => log.info({ ok }) })
 * if (!health.healthy) return fallback()
 */
export class EngineHealth {
  readonly #o: HealthOptions;
  #healthy = true;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #intervalMs = PROBE_INTERVAL_MS;
  #probing = false;
  #closed = false;
  /** A key where the last failure happened: the probe asks there. */
  #probeKey = 'sluice-probe';
  readonly #unwatch: () => void;

  /**
   * The next probe, between half an interval and an interval from now (a fleet that failed at once must not
   * probe and reconnect in step); the interval grows while the engine stays away.
   */
  #scheduleProbe(): void {
    this.#timer = setTimeout(
      () => {
        this.#intervalMs = Math.min(this.#intervalMs * 2, MAX_PROBE_INTERVAL_MS);
        this.#scheduleProbe();
        this.#probe();
      },
      this.#intervalMs * (0.5 + 0.5 * Math.random()),
    );
    // A probe loop must not keep a process alive on its own.
    (this.#timer as { unref?: () => void }).unref?.();
  }

  readonly #probe = (): void => {
    if (this.#probing || this.#closed) return;
    const link = this.#o.link;
    link.nudgeReconnect();
    // Until the client is connected a command would only wait in its offline queue.
    if (!link.connected) return;
    this.#probing = true;
    withDeadline(this.#o.probe(this.#probeKey), this.#o.timeoutMs, 'probe')
      .then(
        () => this.reportSuccess(),
        () => undefined,
      )
      .finally(() => {
        this.#probing = false;
      });
  };

  constructor(options: HealthOptions) {
    this.#o = options;
    this.#unwatch = options.link.watch(
      (error) => this.reportFailure(error),
      // A client that just connected is probed at once, not at the next tick.
      () => {
        if (!this.#healthy) this.#probe();
      },
    );
  }

  get healthy(): boolean {
    return this.#healthy;
  }

  /** A call to the engine succeeded: a failing store is healthy again (and says so once). */
  reportSuccess(): void {
    if (this.#healthy || this.#closed) return;
    this.#healthy = true;
    this.#stopProbing();
    this.#o.onChange(true);
  }

  /**
   * A call about `key` failed. An error the engine answered about that key alone (isKeyScoped) says the
   * engine is there: it leaves the store healthy. Events fire on the change from healthy to
   * failing and back, not once per failed call.
   */
  reportFailure(error: unknown, key?: string): void {
    if (this.#closed || this.#o.isKeyScoped(error)) return;
    if (key !== undefined) this.#probeKey = key;
    if (!this.#healthy) return;
    this.#healthy = false;
    this.#intervalMs = PROBE_INTERVAL_MS;
    this.#scheduleProbe();
    this.#o.onChange(false, error instanceof Error ? error : new Error(String(error)));
  }

  #stopProbing(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** Stops probing and nudging, and stops listening to the client (which stays the caller's). */
  close(): void {
    this.#closed = true;
    this.#stopProbing();
    this.#unwatch();
  }
}
