/** An event-emitting client (ioredis, iovalkey, node-redis): the part watching it needs. */
export interface EmittingClient {
  on(event: string, listener: (...args: unknown[]) => void): unknown;
  off(event: string, listener: (...args: unknown[]) => void): unknown;
}

interface Watchers {
  readonly errors: Set<(error: Error) => void>;
  readonly readies: Set<() => void>;
  readonly onError: (error: unknown) => void;
  readonly onReady: () => void;
}

const watched = new WeakMap<EmittingClient, Watchers>();

/**
 * Listens to a client's connection errors and to it becoming ready; returns the function that stops
 * listening. The clients that emit these events all name them 'error' and 'ready'. However many stores
 * watch one client, it holds one listener per event (a dozen stores on one client would otherwise trip
 * Node's MaxListenersExceededWarning on the user's client), removed when the last store stops watching.
 */
export function watchEmitter(client: EmittingClient, onError: (error: Error) => void, onReady: () => void): () => void {
  let w = watched.get(client);
  if (w === undefined) {
    const errors = new Set<(error: Error) => void>();
    const readies = new Set<() => void>();
    w = {
      errors,
      readies,
      onError: (error) => {
        for (const listener of [...errors]) listener(error as Error);
      },
      onReady: () => {
        for (const listener of [...readies]) listener();
      },
    };
    watched.set(client, w);
    client.on('error', w.onError);
    client.on('ready', w.onReady);
  }
  const watchers = w;
  // Wrapped, so one store watching twice (or two stores passing the same function) are two watchers.
  const error = (e: Error) => onError(e);
  const ready = () => onReady();
  watchers.errors.add(error);
  watchers.readies.add(ready);
  return () => {
    watchers.errors.delete(error);
    watchers.readies.delete(ready);
    if (watchers.errors.size > 0 || watchers.readies.size > 0 || watched.get(client) !== watchers) return;
    watched.delete(client);
    client.off('error', watchers.onError);
    client.off('ready', watchers.onReady);
  };
}
