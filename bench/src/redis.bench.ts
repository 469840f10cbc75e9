/**
 * Exact mode against one spawned redis-server, in one run: decisions per second and p50/p99 latency at 1, 16
 * and 128 in flight, on one hot key and on 10,000 keys, and Redis commands per decision (INFO commandstats), for
 * sluice exact mode (tokenBucket, fixedWindow) beside rate-limiter-flexible RateLimiterRedis and
 * rate-limit-redis on the same ioredis, and beside the floor: one EVALSHA of a trivial INCR script per
 * decision. Then a hot denied key, and Redis memory per key over three shapes of key. Every subject's prefix
 * has the same length. Figures are medians of interleaved rounds (the floor itself moves by a third between
 * runs on a shared machine). Writes bench/results/redis.json; the targets printed are issue #29's, each a
 * ratio to rate-limiter-flexible (or the lowest peer) measured in the same run on the same client.
 *
 * The same exact-mode subjects, the floor and rate-limiter-flexible (`useRedisPackage: true`) also run over
 * node-redis (`createClient`), the client Redis recommends for new projects, so each client's ratios are
 * measured against its own floor in the same run.
 *
 * Two more reference points show where the targets meet Redis's own costs: the stateful floor (the least an
 * exact decision can do in one script: GET, TIME, SET PX of one token bucket; bench/lua/stateful-floor.lua)
 * and redis-server CPU time per decision (INFO cpu), which is what bounds throughput once the
 * client batches; and for memory, a bare SET of a small integer with a TTL on a key of sluice's shape.
 *
 * Run: pnpm --filter @sluice/bench bench:redis (BENCH_ROUNDS=n for more rounds)
 */
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { createLimiter, fixedWindow, tokenBucket } from '@sluice/core';
import { redisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { RedisStore as RateLimitRedisStore } from 'rate-limit-redis';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { spawnRedisServer } from '../../test/harness/redis-server.js';
import { driveInFlight, fmt, median, redisCpuUs, totalCommands as totalCommandsOf, writeJson } from './harness.js';

const HUGE = 1_000_000_000;
const FLOOR = 'floor: EVALSHA of an INCR script';
const STATEFUL_FLOOR = 'stateful floor: GET + TIME + SET PX script';
const KEYS = 10_000;
const keys = Array.from({ length: KEYS }, (_, i) => `user:${i}`);
type Decide = (key: string) => Promise<unknown>;

const server = await spawnRedisServer();
const redis = new Redis(server.url);
const nodeRedis = await createClient({ url: server.url }).connect();
/** Subjects measured over node-redis carry this prefix in their names. */
const NODE_REDIS = 'node-redis: ';

const totalCommands = () => totalCommandsOf(redis);

interface Row {
  subject: string;
  keys: string;
  inFlight: number;
  decisionsPerSecond: number;
  p50Us: number;
  p99Us: number;
  commandsPerDecision: number;
  /** redis-server CPU time per decision (INFO cpu), the INFO calls that measure it included. */
  redisCpuUsPerDecision: number;
}

async function measure(subject: string, decide: Decide, hot: boolean, inFlight: number, total: number): Promise<Row> {
  // Warm up (connections, scripts, JIT), then measure.
  for (let i = 0; i < 200; i++) await decide(hot ? 'hot' : (keys[i % KEYS] as string));
  const before = await totalCommands();
  const cpuBefore = await redisCpuUs(redis);
  const { elapsedMs: elapsed, latencies } = await driveInFlight(
    decide,
    (i) => (hot ? 'hot' : (keys[i % KEYS] as string)),
    total,
    inFlight,
  );
  const commands = (await totalCommands()) - before;
  const cpuUs = (await redisCpuUs(redis)) - cpuBefore;
  const row = {
    subject,
    keys: hot ? 'hot key' : '10k keys',
    inFlight,
    decisionsPerSecond: (total / elapsed) * 1000,
    p50Us: (latencies[Math.floor(total * 0.5)] as number) * 1000,
    p99Us: (latencies[Math.floor(total * 0.99)] as number) * 1000,
    commandsPerDecision: commands / total,
    redisCpuUsPerDecision: cpuUs / total,
  };
  console.log(
    `  ${subject.padEnd(36)} ${row.keys.padEnd(8)} ${String(inFlight).padStart(3)} in flight ` +
      `${fmt(row.decisionsPerSecond).padStart(7)}/s  p50 ${row.p50Us.toFixed(0).padStart(5)} us  p99 ` +
      `${row.p99Us.toFixed(0).padStart(6)} us  ${row.commandsPerDecision.toFixed(3)} cmd/decision  ` +
      `${row.redisCpuUsPerDecision.toFixed(2)} redis cpu us/decision`,
  );
  return row;
}

/**
 * Each subject's key prefix: two letters and a two-digit count, so every subject's keys are as long as the
 * others' (Redis memory per key moves in 16-byte steps of key length) and no two runs share keys.
 */
function prefixer(): (tag: string) => string {
  let n = 0;
  return (tag) => `${tag}${String(++n % 100).padStart(2, '0')}`;
}

function subjects(): Array<[string, () => Promise<Decide>]> {
  const prefix = prefixer();
  return [
    [
      FLOOR,
      async () => {
        const sha = (await redis.script('LOAD', "return redis.call('INCR', KEYS[1])")) as string;
        return (key) => redis.evalsha(sha, 1, `floor:${key}`);
      },
    ],
    [
      STATEFUL_FLOOR,
      async () => {
        const sha = (await redis.script(
          'LOAD',
          readFileSync(new URL('../lua/stateful-floor.lua', import.meta.url), 'utf8'),
        )) as string;
        const p = prefix('sf');
        return (key) => redis.evalsha(sha, 1, `${p}{${key}}tb`, HUGE, HUGE);
      },
    ],
    [
      'sluice exact tokenBucket',
      async () => {
        const limiter = createLimiter({
          rules: tokenBucket({ capacity: HUGE, refillPerSecond: HUGE }),
          store: redisStore({ redis }),
          prefix: prefix('tb'),
        });
        return (key) => limiter.tryAcquire(key);
      },
    ],
    [
      'sluice exact fixedWindow',
      async () => {
        const limiter = createLimiter({
          rules: fixedWindow({ limit: HUGE, windowMs: 60_000 }),
          store: redisStore({ redis }),
          prefix: prefix('fw'),
        });
        return (key) => limiter.tryAcquire(key);
      },
    ],
    [
      'rate-limiter-flexible RateLimiterRedis',
      async () => {
        const rlf = new RateLimiterRedis({ storeClient: redis, points: HUGE, duration: 60, keyPrefix: prefix('rf') });
        return (key) => rlf.consume(key);
      },
    ],
    [
      `${NODE_REDIS}${FLOOR}`,
      async () => {
        const sha = await nodeRedis.scriptLoad("return redis.call('INCR', KEYS[1])");
        return (key) => nodeRedis.evalSha(sha, { keys: [`floor:${key}`] });
      },
    ],
    [
      `${NODE_REDIS}sluice exact tokenBucket`,
      async () => {
        const limiter = createLimiter({
          rules: tokenBucket({ capacity: HUGE, refillPerSecond: HUGE }),
          store: redisStore({ redis: nodeRedis }),
          prefix: prefix('tb'),
        });
        return (key) => limiter.tryAcquire(key);
      },
    ],
    [
      `${NODE_REDIS}sluice exact fixedWindow`,
      async () => {
        const limiter = createLimiter({
          rules: fixedWindow({ limit: HUGE, windowMs: 60_000 }),
          store: redisStore({ redis: nodeRedis }),
          prefix: prefix('fw'),
        });
        return (key) => limiter.tryAcquire(key);
      },
    ],
    [
      `${NODE_REDIS}rate-limiter-flexible RateLimiterRedis`,
      async () => {
        const rlf = new RateLimiterRedis({
          storeClient: nodeRedis,
          useRedisPackage: true,
          points: HUGE,
          duration: 60,
          keyPrefix: prefix('rf'),
        });
        return (key) => rlf.consume(key);
      },
    ],
    [
      'rate-limit-redis',
      async () => {
        const store = new RateLimitRedisStore({
          sendCommand: (command: string, ...args: string[]) => redis.call(command, ...args) as never,
          prefix: `${prefix('rr')}:`,
        });
        store.init({ windowMs: 60_000 } as never);
        return (key) => store.increment(key);
      },
    ],
  ];
}

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
console.log(
  `sluice redis bench — node ${process.version}, ${cpus()[0]?.model ?? 'cpu'} x${cpus().length}, redis-server on ` +
    `${server.url}`,
);
console.log(`${ROUNDS} interleaved rounds; each figure is the median of its rounds`);
const samples = new Map<string, Row[]>();
for (let round = 1; round <= ROUNDS; round++) {
  for (const [subject, make] of subjects()) {
    for (const hot of [true, false]) {
      for (const inFlight of [1, 16, 128]) {
        await redis.flushall();
        const row = await measure(subject, await make(), hot, inFlight, inFlight === 1 ? 4_000 : 60_000);
        const k = `${subject}|${hot}|${inFlight}`;
        samples.set(k, [...(samples.get(k) ?? []), row]);
      }
    }
  }
}
const rows: Row[] = [...samples.values()].map((rs) => ({
  ...(rs[0] as Row),
  decisionsPerSecond: median(rs.map((r) => r.decisionsPerSecond)),
  p50Us: median(rs.map((r) => r.p50Us)),
  p99Us: median(rs.map((r) => r.p99Us)),
  commandsPerDecision: median(rs.map((r) => r.commandsPerDecision)),
  redisCpuUsPerDecision: median(rs.map((r) => r.redisCpuUsPerDecision)),
}));

// A hot denied key: answered by the deny cache, no Redis command at all.
await redis.flushall();
const denied = createLimiter({
  rules: fixedWindow({ limit: 10, windowMs: 60_000 }),
  store: redisStore({ redis }),
  prefix: 'denied',
});
for (let i = 0; i < 11; i++) await denied.tryAcquire('hot');
const deniedRow = await measure(
  'sluice exact fixedWindow, hot denied key',
  (k) => denied.tryAcquire(k),
  true,
  128,
  500_000,
);

// Redis memory per key: 100,000 keys each, used_memory before and after, for three shapes of key (Redis
// rounds every key up to 16, 32, 48 or 64 bytes, so where a key's length falls moves the figure by 16 B): the
// bench's own `user:N`, an IPv4 address (what an HTTP limiter keys by), and a UUID (an API key or user id).
async function usedMemory(): Promise<number> {
  return Number(/used_memory:(\d+)/.exec(await redis.info('memory'))?.[1]);
}
const KEY_SHAPES: Record<string, (i: number) => string> = {
  'user:N': (i) => `user:${i}`,
  IPv4: (i) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`,
  UUID: (i) =>
    `${i.toString(16).padStart(8, '0')}-7f3a-4c1e-9b2d-${(i * 2654435761).toString(16).padStart(12, '0').slice(-12)}`,
};
const memory: Array<{ subject: string; keys: string; bytesPerKey: number }> = [];
async function measureMemory(subject: string, keys: string, write: (i: number) => Promise<unknown>): Promise<void> {
  await redis.flushall();
  const before = await usedMemory();
  const N = 100_000;
  for (let i = 0; i < N; i += 1000) await Promise.all(Array.from({ length: 1000 }, (_, j) => write(i + j)));
  const bytesPerKey = ((await usedMemory()) - before) / N;
  memory.push({ subject, keys, bytesPerKey });
  console.log(`  redis memory/key  ${subject.padEnd(40)} ${keys.padEnd(7)} ${bytesPerKey.toFixed(0)} bytes`);
}
const MEMORY_SUBJECTS = subjects().filter(([name]) => name !== FLOOR && !name.startsWith(NODE_REDIS));
for (const [shape, keyOf] of Object.entries(KEY_SHAPES)) {
  for (const [subject, make] of MEMORY_SUBJECTS) {
    const decide = await make();
    await measureMemory(subject, shape, (i) => decide(keyOf(i)));
  }
}
// The least one key with a TTL costs: a small integer (Redis stores it in the object itself) under a key of
// sluice's fixedWindow shape. One key per state cannot go below this, whatever the state's encoding.
await measureMemory('bare SET of an integer, PX, key like sluice fixedWindow', 'user:N', (i) =>
  redis.set(`fw99{user:${i}}ng61c8ab30`, 1, 'PX', 60_000),
);

const find = (subject: string, keysLabel: string, inFlight: number) =>
  rows.find((r) => r.subject === subject && r.keys === keysLabel && r.inFlight === inFlight);
const perSecond = (s: string, k: string, f: number) => find(s, k, f)?.decisionsPerSecond ?? Number.NaN;
const PEERS = ['rate-limiter-flexible RateLimiterRedis', 'rate-limit-redis'];
const p50 = (subject: string) => find(subject, 'hot key', 1)?.p50Us ?? Number.NaN;
const loneCpu = (subject: string) => find(subject, 'hot key', 1)?.redisCpuUsPerDecision ?? Number.NaN;
const bytes = (subject: string, keys = 'user:N') =>
  memory.find((m) => m.subject === subject && m.keys === keys)?.bytesPerKey ?? Number.NaN;
const lowestPeerP50 = Math.min(...PEERS.map(p50));
const RLF = PEERS[0] as string;
const cpu = (s: string, k: string, f: number) => find(s, k, f)?.redisCpuUsPerDecision ?? Number.NaN;
const SLUICE = ['sluice exact tokenBucket', 'sluice exact fixedWindow'];
// The targets of issue #29 (need < 0: at most -need; need > 0: at least need), each against
// rate-limiter-flexible (or the lowest peer) measured in this same run, on the same client.
const targets = [
  ...SLUICE.flatMap((s) => [
    { target: `${s}, 1 in flight: p50 at most the lowest peer's`, value: p50(s) / lowestPeerP50, need: -1 },
    { target: `${s}, 1 in flight: Redis CPU at most RateLimiterRedis's`, value: loneCpu(s) / loneCpu(RLF), need: -1 },
  ]),
  ...['', NODE_REDIS].flatMap((client) =>
    SLUICE.flatMap((name) => {
      const s = `${client}${name}`;
      const peer = `${client}${RLF}`;
      return [
        {
          target: `${s}, 10k keys, 128 in flight: Redis CPU per decision at most 0.6x RateLimiterRedis's`,
          value: cpu(s, '10k keys', 128) / cpu(peer, '10k keys', 128),
          need: -0.6,
        },
        {
          target: `${s}, 10k keys, 128 in flight: decisions/s at least 2x RateLimiterRedis's`,
          value: perSecond(s, '10k keys', 128) / perSecond(peer, '10k keys', 128),
          need: 2,
        },
      ];
    }),
  ),
  {
    target: "reference, not a target: the stateful floor, 1 in flight: p50 / the lowest peer's",
    value: p50(STATEFUL_FLOOR) / lowestPeerP50,
    need: Number.NaN,
  },
  { target: 'hot denied key >= 200k decisions/s', value: deniedRow.decisionsPerSecond / 1000, need: 200 },
  { target: 'hot denied key: 0 Redis commands per decision', value: deniedRow.commandsPerDecision, need: -0 },
  {
    target: "redis memory per key (user:N), fixedWindow: at most RateLimiterRedis's",
    value: bytes('sluice exact fixedWindow') / bytes(RLF),
    need: -1,
  },
  {
    target: "redis memory per key (user:N), tokenBucket: at most 1.15x RateLimiterRedis's",
    value: bytes('sluice exact tokenBucket') / bytes(RLF),
    need: -1.15,
  },
  ...['IPv4', 'UUID'].flatMap((keys) =>
    SLUICE.map((s) => ({
      target: `reference, not a target: redis memory per key (${keys}), ${s} / RateLimiterRedis's`,
      value: bytes(s, keys) / bytes(RLF, keys),
      need: Number.NaN,
    })),
  ),
];
console.log(
  '\n| subject | keys | in flight | decisions/s | p50 us | p99 us | Redis cmds/decision | Redis CPU us/decision ' +
    '|\n| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |',
);
for (const r of [...rows, deniedRow]) {
  console.log(
    `| ${r.subject} | ${r.keys} | ${r.inFlight} | ${fmt(r.decisionsPerSecond)} | ${r.p50Us.toFixed(0)} | ` +
      `${r.p99Us.toFixed(0)} | ${r.commandsPerDecision.toFixed(3)} | ${r.redisCpuUsPerDecision.toFixed(2)} |`,
  );
}
console.log(`\n| Redis memory per key (100,000 keys) | ${Object.keys(KEY_SHAPES).join(' | ')} |`);
console.log(
  `| --- | ${Object.keys(KEY_SHAPES)
    .map(() => '---:')
    .join(' | ')} |`,
);
for (const subject of [...new Set(memory.map((m) => m.subject))])
  console.log(
    `| ${subject} | ${Object.keys(KEY_SHAPES)
      .map((k) => bytes(subject, k).toFixed(0))
      .join(' | ')} |`,
  );
console.log('\ntargets');
for (const t of targets) {
  const met = Number.isNaN(t.need) ? undefined : t.need < 0 ? t.value <= -t.need : t.value >= t.need;
  console.log(`  ${met === undefined ? '      ' : met ? 'met   ' : 'MISSED'} ${t.target}: ${t.value.toFixed(3)}`);
}
writeJson(fileURLToPath(new URL('../results/redis.json', import.meta.url)), {
  date: new Date().toISOString(),
  node: process.version,
  cpu: cpus()[0]?.model,
  rows,
  deniedRow,
  memory,
  targets,
});
redis.disconnect();
await nodeRedis.quit();
await server.stop();
process.exit(0);
