/**
 * A connection's scripts reach the server in the order they were asked, whichever client carries them and
 * whether the server runs them as functions or by sha1: a write asked before a read of the same key is read
 * by it. A clean-clone CI run met the reorder this guards against (a grant by sha1, sent again after NOSCRIPT,
 * ran after a peek of its key asked behind it by FCALL; the peek saw no grant). Real clients, real servers.
 */
import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toConnection } from '../../packages/redis/src/connection/connect.js';
import type { LuaScript } from '../../packages/redis/src/scripts.js';
import { SLUICE_ACL, SLUICE_GLIDE_ACL } from '../harness/acl.js';
import { CLIENT_KINDS, openClient } from '../harness/clients.js';
import { startTestRedis, type TestRedis } from '../harness/redis-server.js';

let made = 0;

/** A script of `body` (Lua over KEYS and ARGV), new to the server: its name is this run's own. */
function newScript(body: string): LuaScript {
  const functionName = `order_test_${process.pid}_${++made}`;
  const source = `-- ${functionName}\n${body}`;
  return {
    name: functionName,
    source,
    sha1: createHash('sha1').update(source).digest('hex'),
    library: `#!lua name=${functionName}\nredis.register_function('${functionName}', function(KEYS, ARGV)\n${body}\nend)`,
    functionName,
  };
}

const text = (reply: unknown): string => (Buffer.isBuffer(reply) ? reply.toString() : String(reply));

let server: TestRedis;
let admin: Redis;
beforeAll(async () => {
  server = await startTestRedis();
  admin = new Redis(server.url);
  // The README's line, without functions: this user's scripts run by sha1 (EVALSHA, then EVAL on NOSCRIPT).
  await admin.call('ACL', 'SETUSER', 'sluice', '>secret', ...SLUICE_ACL);
  await admin.call('ACL', 'SETUSER', 'sluice-glide', '>secret', ...SLUICE_ACL, ...SLUICE_GLIDE_ACL);
});
afterAll(async () => {
  admin.disconnect();
  await server.stop();
});

describe.each(CLIENT_KINDS)('%s: scripts run in the order asked', (kind) => {
  for (const user of ['default', 'sluice'] as const) {
    it(`a write by a script new to the server is read by a known script asked after it (user ${user})`, async () => {
      const open = await openClient(
        kind,
        server,
        user === 'default' ? undefined : { username: kind === 'glide' ? 'sluice-glide' : 'sluice', password: 'secret' },
      );
      try {
        const connection = toConnection(open.client);
        const read = newScript("return redis.call('GET', KEYS[1]) or ''");
        const write = newScript("return redis.call('SET', KEYS[1], ARGV[1])");
        const key = `sluice{order}:${kind}:${user}`;
        // The read is known to the server (loaded as a function, or run once by sha1); the write is not.
        await connection.runScript(read, [key], []);
        const written = connection.runScript(write, [key], ['written']);
        const seen = connection.runScript(read, [key], []);
        await written;
        expect(text(await seen)).toBe('written');
      } finally {
        await open.close();
      }
    });
  }
});
