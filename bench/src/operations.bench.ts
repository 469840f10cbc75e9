/**
 * What operations cost Redis as the fleet grows: every interval each of N nodes (N = 64, 256, 1,000) adds its
 * limited-keys counts to the limiter's board (limited_keys.lua 'add': 32 keys, drawn Zipf-skewed from 5,000,
 * as a node's sketches flush them) and checks its access list's version (access_list.lua 'read' with the
 * version it knows: the periodic heal); then one reader sums five minutes of the board (topLimited). Run
 * through the same classes the stores use (RedisBoard, RedisAccessLists), against a redis-server of its own
 * per N. Redis's own accounting (INFO commandstats) gives microseconds per call of each: a node's calls must
 * cost the same whatever N, and the reader's must not grow with N (each minute is trimmed to 4 x capacity).
 * Writes bench/results/operations.json.
 *
 *   node --conditions=sluice-source --import tsx bench/src/operations.bench.ts   (pnpm --filter @sluice/bench bench:operations)
 */
import { fileURLToPath } from 'node:url';
import { RedisAccessLists, RedisBoard, StartupChecks, toConnection } from '@sluice/redis/internal';
import { Redis } from 'ioredis';
import { spawnRedisServer } from '../../test/harness/redis-server.js';
import { scriptStats, writeJson } from './harness.js';
import { MAX_ACCESS_ENTRIES } from '@sluice/core/internal';

const SIZES = (process.env.OPERATIONS_NODES ?? '64,256,1000').split(',').map(Number);
const INTERVALS = Number(process.env.OPERATIONS_INTERVALS ?? 10);
const ROWS_PER_FLUSH = 32;
const KEEP = 256;
const KEYS = 5_000;

/** A Zipf-skewed key index in [0, KEYS). */
function zipfKey(): number {
  return Math.min(KEYS - 1, Math.floor(KEYS ** Math.random()) - 1);
}

async function measure(redis: Redis, calls: () => Promise<void>) {
  await redis.config('RESETSTAT');
  await calls();
  return scriptStats(redis);
}

const rows = [];
for (const nodes of SIZES) {
  const server = await spawnRedisServer();
  const redis = new Redis(server.url);
  const connection = toConnection(redis);
  const prefix = 'ops';
  const board = new RedisBoard({ connection, timeoutMs: 5_000 }, prefix);
  const lists = new RedisAccessLists({
    connection,
    timeoutMs: 5_000,
    checks: new StartupChecks(connection, 5_000, () => {}),
    channels: undefined,
  }).bind(prefix);
  try {
    // A list of a thousand entries, as a real deny list might hold (its version check must not read them).
    await lists.put(
      Array.from({ length: 1_000 }, (_, i) => ({ entry: `10.${i >> 8}.${i & 255}.0/24`, list: 'deny' as const })),
    );
    const { version } = await lists.read();
    const minute = Math.floor(Date.now() / 60_000);
    const flush = await measure(redis, async () => {
      for (let interval = 0; interval < INTERVALS; interval++) {
        await Promise.all(
          Array.from({ length: nodes }, () => {
            const seen = new Map<string, number>();
            while (seen.size < ROWS_PER_FLUSH) seen.set(`user:${zipfKey()}`, 1 + Math.floor(Math.random() * 20));
            const flushRows = [...seen].map(([key, denied]) => ({ key, denied, nearLimit: denied >> 2, error: 0 }));
            return board.add(minute - (interval % 5), flushRows, KEEP);
          }),
        );
      }
    });
    const poll = await measure(redis, async () => {
      for (let interval = 0; interval < INTERVALS; interval++)
        await Promise.all(Array.from({ length: nodes }, () => lists.read(version)));
    });
    const read = await measure(redis, async () => {
      for (let i = 0; i < 20; i++) await board.read(minute - 4, minute);
    });
    const row = {
      nodes,
      usPerFlush: flush.usec / flush.calls,
      usPerVersionCheck: poll.usec / poll.calls,
      usPerTopRead: read.usec / read.calls,
      redisMsPerIntervalForFleet: (flush.usec + poll.usec) / INTERVALS / 1_000,
    };
    rows.push(row);
    console.log(
      `${String(nodes).padStart(5)} nodes: ${row.usPerFlush.toFixed(1)} us per flush, ${row.usPerVersionCheck.toFixed(1)} us per ` +
        `version check, ${row.usPerTopRead.toFixed(0)} us per topLimited read (5 min), fleet ${row.redisMsPerIntervalForFleet.toFixed(1)} ms of Redis per interval`,
    );
  } finally {
    lists.unbind();
    redis.disconnect();
    await server.stop();
  }
}
writeJson(fileURLToPath(new URL('../results/operations.json', import.meta.url)), {
  what: 'Redis time per call of each operation a node runs every interval (limited-keys flush of 32 keys, access-list version check) and of one topLimited read, by fleet size',
  intervals: INTERVALS,
  maxAccessEntries: MAX_ACCESS_ENTRIES,
  rows,
});
