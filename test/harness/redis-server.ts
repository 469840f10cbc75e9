import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from './free-port.js';

/** A Redis the tests may use and flush: one they started themselves, or one named by REDIS_URL. */
export interface TestRedis {
  readonly host: string;
  readonly port: number;
  readonly url: string;
  /** Where it came from: 'spawned', 'REDIS_URL' or 'testcontainers'. */
  readonly source: string;
  /** The spawned process, for fault injection (SIGSTOP, kill -9); undefined for external servers. */
  readonly process?: ChildProcess;
  stop(): Promise<void>;
}

const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** Waits until a server answers PING, or throws after `maxWaitMs`. */
export async function waitForPing(host: string, port: number, maxWaitMs = 10_000): Promise<void> {
  const deadline = Date.now() + maxWaitMs;
  for (;;) {
    const client = new Redis({
      host,
      port,
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      retryStrategy: () => null,
    });
    client.on('error', () => {}); // refused connections are expected while the server starts
    try {
      await client.connect();
      if ((await client.ping()) === 'PONG') return;
    } catch {
      if (Date.now() > deadline) throw new Error(`redis on ${host}:${port} did not answer PING within ${maxWaitMs} ms`);
      await new Promise((r) => setTimeout(r, 50));
    } finally {
      client.disconnect();
    }
  }
}

export function hasRedisServer(): boolean {
  try {
    execFileSync('redis-server', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/**
 * Starts a throwaway redis-server on a free loopback port (or on `port`, to restart one in place after a
 * fault); extra args are appended (e.g. cluster flags).
 */
export async function spawnRedisServer(extraArgs: string[] = [], options: { port?: number } = {}): Promise<TestRedis> {
  for (let attempt = 0; ; attempt++) {
    const port = options.port ?? (await freePort());
    const dir = mkdtempSync(join(tmpdir(), 'sluice-redis-'));
    const child = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, ...extraArgs],
      { stdio: 'ignore' },
    );
    running.add(child);
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    try {
      await waitForPing('127.0.0.1', port, 10_000);
    } catch (error) {
      child.kill('SIGKILL');
      running.delete(child);
      rmSync(dir, { recursive: true, force: true });
      if (attempt < 3 && options.port === undefined) continue; // the port was taken between picking and binding
      throw error;
    }
    return {
      host: '127.0.0.1',
      port,
      url: `redis://127.0.0.1:${port}`,
      source: 'spawned',
      process: child,
      async stop() {
        if (child.exitCode === null && child.signalCode === null) {
          child.kill('SIGCONT');
          child.kill('SIGTERM');
          const timer = setTimeout(() => child.kill('SIGKILL'), 3_000);
          await exited;
          clearTimeout(timer);
        }
        running.delete(child);
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
}

function dockerEngineAvailable(): boolean {
  try {
    execFileSync('docker', ['info'], { stdio: 'ignore', timeout: 5_000 });
    return true;
  } catch {
    return false;
  }
}

async function fromTestcontainers(): Promise<TestRedis> {
  const { GenericContainer, Wait } = await import('testcontainers');
  const container = await new GenericContainer('redis:7-alpine')
    .withExposedPorts(6379)
    .withWaitStrategy(Wait.forLogMessage('Ready to accept connections'))
    .start();
  const host = container.getHost();
  const port = container.getMappedPort(6379);
  return {
    host,
    port,
    url: `redis://${host}:${port}`,
    source: 'testcontainers',
    stop: async () => void (await container.stop()),
  };
}

/**
 * The standalone Redis a suite runs against: REDIS_URL if set (never stopped by us), else a spawned
 * redis-server, else a testcontainers container when a Docker engine answers. With none of these it
 * throws, in CI and locally alike: a suite that needs Redis never passes by skipping.
 */
export async function startTestRedis(): Promise<TestRedis> {
  const fromEnv = process.env.REDIS_URL;
  if (fromEnv) {
    const u = new URL(fromEnv);
    const host = u.hostname;
    const port = Number(u.port || 6379);
    await waitForPing(host, port);
    return { host, port, url: fromEnv, source: 'REDIS_URL', stop: async () => {} };
  }
  if (hasRedisServer()) return spawnRedisServer();
  if (dockerEngineAvailable()) return fromTestcontainers();
  throw new Error('no Redis for the tests: install redis-server, start a Docker engine, or set REDIS_URL');
}
