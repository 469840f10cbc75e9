/**
 * Operating a fleet: two processes of one limiter on one Redis, each serving the admin router, and the
 * sluice CLI against the same Redis (no service of its own). The fleet's most limited keys in order after a
 * skewed load; the CLI's inspect says what a node's peek says; a block from the CLI and a CIDR deny from one
 * node's admin router hold on both within a second; keys with control characters print escaped.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { runCli } from '@sluice/cli';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { opsProcess } from '../harness/ops-process.js';
import { useTestRedis } from '../harness/use-redis.js';

const testRedis = useTestRedis();
const running: Array<{ stop: () => void }> = [];
afterEach(() => {
  for (const node of running.splice(0)) node.stop();
});
let n = 0;
const TOKEN = 'ops-token';

/** Two ready processes of one limiter (5 per hour: no window ends while a test runs) under a fresh prefix. */
async function twoNodes() {
  const prefix = `ops-${process.pid}-${++n}`;
  const env = { REDIS_URL: testRedis().server.url, PREFIX: prefix, ADMIN_TOKEN: TOKEN, LIMIT: '5' };
  const [a, b] = await Promise.all([opsProcess(env), opsProcess(env)]);
  running.push(a, b);
  return { a, b, prefix, url: env.REDIS_URL };
}

/** The CLI run in this process: its exit code and what it printed. */
async function cli(...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, { out: (l) => out.push(l), err: (l) => err.push(l), env: {} });
  return { code, out, err };
}

type Decision = { allowed: boolean; remaining: number; blocked?: boolean; access?: { list: string; entry: string } };

describe('operating two processes on one Redis', () => {
  it('the top limited keys are the fleet’s, in order; the CLI’s top agrees', async () => {
    const { a, b, prefix, url } = await twoNodes();
    for (const [node, load] of [
      [a, { hot: 30, warm: 10, cool: 6 }],
      [b, { hot: 30, warm: 4, cool: 2 }],
    ] as const) {
      for (const [key, count] of Object.entries(load)) await node.ask({ decide: key, count });
    }
    await Promise.all([a.ask({ flush: true }), b.ask({ flush: true })]);
    const top = await b.ask<{ top: Array<{ key: string; denied: number }> }>({ top: 3 });
    expect(top.top.map((row) => [row.key, row.denied])).toEqual([
      ['hot', 55],
      ['warm', 9],
      ['cool', 3],
    ]);
    expect(await a.ask({ top: 3 })).toEqual(top);
    const fromCli = await cli('top', '--prefix', prefix, '--url', url, '--clear-keys', '--json', '--n', '3');
    expect(fromCli.code).toBe(0);
    expect(JSON.parse(fromCli.out[0] as string).keys.map((row: { key: string }) => row.key)).toEqual([
      'hot',
      'warm',
      'cool',
    ]);
  });

  it("the CLI's inspect shows the remaining a node's peek shows; its block holds on both nodes at once", async () => {
    const { a, b, prefix, url } = await twoNodes();
    await a.ask({ decide: 'user:7', count: 2 });
    await b.ask({ decide: 'user:7', count: 1 });
    const peeked = await b.ask<Decision>({ peek: 'user:7' });
    const inspected = await cli('inspect', 'user:7', '--prefix', prefix, '--url', url, '--json');
    expect(inspected.code).toBe(0);
    expect(JSON.parse(inspected.out[0] as string).decision.remaining).toBe(peeked.remaining);
    expect(peeked.remaining).toBe(2);
    const text = await cli('inspect', 'user:7', '--prefix', prefix, '--url', url);
    expect(text.out).toContain('remaining   2 of 5 (rule api)');
    const blocked = await cli('block', 'user:9', '--ms', '60000', '--prefix', prefix, '--url', url);
    expect(blocked).toMatchObject({ code: 0, out: ['blocked for 60000 ms: user:9'] });
    // The ban is Redis state, not a message: each node's first decision after the CLI returned is refused.
    const [onA, onB] = await Promise.all([a.ask<Decision>({ try: 'user:9' }), b.ask<Decision>({ try: 'user:9' })]);
    expect([onA.blocked, onB.blocked]).toEqual([true, true]);
    expect((await cli('unblock', 'user:9', '--prefix', prefix, '--url', url)).code).toBe(0);
    expect((await a.ask<Decision>({ try: 'user:9' })).allowed).toBe(true);
  });

  it("a CIDR deny added through one node's admin router holds on both within a second; the CLI lists it", async () => {
    const { a, b, prefix, url } = await twoNodes();
    expect((await b.ask<Decision>({ try: 'ip:203.0.113.77', address: '203.0.113.77' })).allowed).toBe(true);
    const response = await fetch(`${a.admin}/api/limiters/${prefix}/lists`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ list: 'deny', entries: ['203.0.113.0/24'], reason: 'scanner' }),
    });
    expect(response.status).toBe(200);
    const from = performance.now();
    for (const node of [a, b]) {
      await vi.waitFor(
        async () =>
          expect((await node.ask<Decision>({ try: 'ip:203.0.113.77', address: '203.0.113.77' })).access?.entry).toBe(
            '203.0.113.0/24',
          ),
        { timeout: 1_000, interval: 10 },
      );
    }
    expect(performance.now() - from).toBeLessThan(1_000);
    const listed = await cli('lists', '--prefix', prefix, '--url', url);
    expect(listed.out).toEqual(['deny  203.0.113.0/24 (scanner)']);
    // An unauthorised request changes nothing.
    const refused = await fetch(`${b.admin}/api/limiters/${prefix}/lists`, {
      method: 'DELETE',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ entries: ['203.0.113.0/24'] }),
    });
    expect(refused.status).toBe(401);
    expect((await cli('lists', '--prefix', prefix, '--url', url, '--json')).out[0]).toContain('203.0.113.0/24');
  });

  it('a key with control characters is printed escaped by the sluice command, never raw', async () => {
    const { a, prefix, url } = await twoNodes();
    const evil = 'evil\u001b[2J\u0007\u009b31m\nFORGED';
    await a.ask({ decide: evil, count: 8 });
    await a.ask({ flush: true });
    // The real command, as a terminal would run it.
    const bin = fileURLToPath(new URL('../../packages/cli/bin/sluice.mjs', import.meta.url));
    const run = (args: string[]) =>
      new Promise<{ code: number | null; stdout: string }>((resolve) => {
        const child = spawn(process.execPath, ['--conditions=sluice-source', '--import', 'tsx', bin, ...args]);
        let stdout = '';
        child.stdout.on('data', (chunk: Buffer) => {
          stdout += chunk.toString();
        });
        child.on('close', (code) => resolve({ code, stdout }));
      });
    const top = await run(['top', '--prefix', prefix, '--url', url, '--clear-keys']);
    expect(top.code).toBe(0);
    expect(top.stdout).toContain('evil\\x1b[2J\\x07\\u{9b}31m\\x0aFORGED');
    const raw = [...top.stdout].filter(
      (c) => c !== '\n' && ((c.codePointAt(0) as number) < 0x20 || (c >= '\u007f' && c <= '\u009f')),
    );
    expect(raw).toEqual([]);
    expect(top.stdout.split('\n').filter((line) => line.startsWith('FORGED'))).toEqual([]);
    const inspected = await cli('inspect', evil, '--prefix', prefix, '--url', url);
    expect(inspected.out[0]).toBe('key         evil\\x1b[2J\\x07\\u{9b}31m\\x0aFORGED');
    const wrong = await run(['lists', '--prefix', 'no-such-prefix', '--url', url]);
    expect(wrong.code).toBe(3);
  });
});
