import { spawn } from 'node:child_process';
import { createServer } from 'node:net';

/** REDIS_URL, or a throwaway redis-server on a free port (stopped with the returned function). */
export async function redisForExample(): Promise<{ url: string; stop: () => void }> {
  const fromEnv = process.env.REDIS_URL;
  if (fromEnv) return { url: fromEnv, stop: () => {} };
  const port = await new Promise<number>((resolve, reject) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
  await new Promise<void>((resolve, reject) => {
    child.once('error', () => reject(new Error('set REDIS_URL, or put redis-server on the PATH')));
    setTimeout(resolve, 300);
  });
  return { url: `redis://127.0.0.1:${port}`, stop: () => child.kill() };
}
