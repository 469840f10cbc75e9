/**
 * A proxy header given several times, on every adapter over real sockets: a client sends its own
 * X-Forwarded-For (or Forwarded) line first and the proxy of ours appends another line after it, as proxies
 * that add a header rather than rewrite it do. byIp behind one proxy must key by the line the proxy added,
 * never by the one the client chose (each framework joins repeated lines in order, and byIp reads from the right).
 */
import { connect } from 'node:net';
import { createLimiter, fixedWindow } from '@sluice/core';
import { byIp } from '@sluice/core/http';
import { afterEach, describe, expect, it } from 'vitest';
import { type TestServer, frameworks, startServer } from './servers.js';

const servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

/** The status of a GET / sent as raw bytes, with header lines exactly as given (repeats kept). */
function rawGet(url: string, lines: readonly string[]): Promise<number> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let answer = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      answer += chunk;
      const status = /^HTTP\/1\.1 (\d{3})/.exec(answer);
      if (status !== null) {
        socket.destroy();
        resolve(Number(status[1]));
      }
    });
    socket.on('error', reject);
    socket.write(
      `GET / HTTP/1.1\r\nHost: ${hostname}\r\n${lines.map((l) => `${l}\r\n`).join('')}Connection: close\r\n\r\n`,
    );
  });
}

describe.each(frameworks)('%s: a proxy header given several times', (framework) => {
  it.each([
    ['x-forwarded-for', (forged: string) => [`X-Forwarded-For: ${forged}`, 'X-Forwarded-For: 198.51.100.7']],
    ['forwarded', (forged: string) => [`Forwarded: for=${forged}`, 'Forwarded: for=198.51.100.7;proto=https']],
  ] as const)(
    '%s: the line the proxy appended is the client, whatever the client sent first',
    async (header, lines) => {
      const limiter = createLimiter({ rules: fixedWindow({ limit: 2, windowMs: 60_000, name: 'w' }) });
      const server = await startServer(framework, { limiter, key: byIp({ trustProxy: 1, proxyHeader: header }) });
      servers.push(server);
      const statuses = [];
      for (let i = 0; i < 4; i++) statuses.push(await rawGet(server.url, lines(`203.0.113.${i + 1}`)));
      expect(statuses).toEqual([200, 200, 429, 429]);
      expect((await limiter.peek('ip:198.51.100.7')).remaining).toBe(0);
      expect((await limiter.peek('ip:203.0.113.1')).remaining).toBe(2);
      await limiter.close();
    },
  );
});
