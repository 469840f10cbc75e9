import { Cluster, Redis } from 'ioredis';

/** A usage error: the command line is wrong (exit code 2). */
export class UsageError extends Error {}
/** The Redis could not be reached, or answered an error (exit code 1). */
export class ReachError extends Error {}

/** Where the CLI connects: a redis:// or rediss:// URL, or a Cluster's nodes. */
export interface Target {
  readonly url: string;
  readonly clusterNodes: readonly string[] | undefined;
}

/** How long the CLI waits to connect before it says Redis cannot be reached. */
const CONNECT_TIMEOUT_MS = 3_000;

/**
 * A connected client for `target`, failing fast and once (no reconnect loop) with a one-line reason: a
 * malformed URL is a UsageError, an unreachable server a ReachError.
 */
export async function connect(target: Target): Promise<Redis | Cluster> {
  const options = {
    lazyConnect: true,
    connectTimeout: CONNECT_TIMEOUT_MS,
    maxRetriesPerRequest: 1,
    retryStrategy: () => null,
    enableOfflineQueue: true,
  };
  let client: Redis | Cluster;
  if (target.clusterNodes !== undefined) {
    const nodes = target.clusterNodes.map((node) => {
      const [host, port] = node.split(':');
      if (!host || !port || !/^\d+$/.test(port))
        throw new UsageError(`--cluster takes host:port,host:port; got ${JSON.stringify(node)}`);
      return { host, port: Number(port) };
    });
    client = new Cluster(nodes, { lazyConnect: true, clusterRetryStrategy: () => null, redisOptions: options });
  } else {
    let url: URL;
    try {
      url = new URL(target.url);
    } catch {
      throw new UsageError(`--url must be a redis:// or rediss:// URL, got ${JSON.stringify(target.url)}`);
    }
    if (url.protocol !== 'redis:' && url.protocol !== 'rediss:')
      throw new UsageError(`--url must be a redis:// or rediss:// URL, got ${JSON.stringify(target.url)}`);
    client = new Redis(target.url, options);
  }
  // The socket's own error (ECONNREFUSED, a TLS failure) says more than the client's 'Connection is closed'.
  let cause: unknown;
  client.on('error', (error: unknown) => {
    cause ??= error;
  });
  try {
    await client.connect();
  } catch (error) {
    client.disconnect();
    const where = target.clusterNodes?.join(',') ?? redacted(target.url);
    const why = cause ?? error;
    throw new ReachError(`cannot reach Redis at ${where}: ${why instanceof Error ? why.message : String(why)}`);
  }
  return client;
}

/** A URL with its password hidden: error lines end up in logs. */
function redacted(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.toString();
  } catch {
    return url;
  }
}
