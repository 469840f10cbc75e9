/** An event-emitting client (ioredis, iovalkey, node-redis): the part watching it needs. */
export interface EmittingClient {
  on(event: string, listener: (...args: unknown[]) => void): unknown;
  off(event: string, listener: (...args: unknown[]) => void): unknown;
}

/**
 * Listens to a client's connection errors and to it becoming ready; returns the function that stops
 * listening. The clients that emit these events all name them 'error' and 'ready'.
 */
export function watchEmitter(client: EmittingClient, onError: (error: Error) => void, onReady: () => void): () => void {
  const error = onError as (...args: unknown[]) => void;
  client.on('error', error);
  client.on('ready', onReady);
  return () => {
    client.off('error', error);
    client.off('ready', onReady);
  };
}
