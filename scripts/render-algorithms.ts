/**
 * Renders docs/algorithms.svg: the same bursty traffic through each algorithm, simulated on a ManualClock
 * (the pure algorithms, as the stores run them), admissions over time one lane per algorithm.
 *   tsx scripts/render-algorithms.ts          writes the file
 *   tsx scripts/render-algorithms.ts --check  exits 1 if the committed file is stale
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  type Algorithm,
  type AlgorithmKind,
  ManualClock,
  calendarWindow,
  fixedWindow,
  gcra,
  leakyBucket,
  slidingWindowCounter,
  slidingWindowLog,
  smoothBursty,
  smoothWarmingUp,
  tokenBucket,
} from '@sluice/core';

const HORIZON_MS = 9_000;

/** Requests in ms: a burst straddling the 1 s boundary, a steady 20/s for 2 s, then 15 at one instant. */
export function traffic(): number[] {
  const times: number[] = [];
  for (let t = 900; t < 1_100; t += 10) times.push(t);
  for (let t = 2_000; t < 4_000; t += 50) times.push(t);
  for (let i = 0; i < 15; i++) times.push(4_400);
  return times;
}

export interface Lane {
  readonly title: string;
  readonly algorithm: Algorithm;
  /** How long a request may wait for a reservation (shaping limiters); 0 decides at once. */
  readonly maxWaitMs: number;
  /** What to notice in this lane. */
  readonly note?: string;
  /** The most admissions in any 1 s that the algorithm promises for this traffic (the test checks it). */
  readonly mostInAnySecond: number;
}

/**
 * Each algorithm's lanes, by kind: typed by AlgorithmKind, so a new algorithm does not compile until the
 * picture shows it (then `npm run docs:picture`).
 */
export const LANES: { readonly [K in AlgorithmKind]: readonly Lane[] } = {
  fixedWindow: [
    {
      title: 'fixedWindow 10 / 1 s',
      algorithm: fixedWindow({ limit: 10, windowMs: 1_000 }),
      maxWaitMs: 0,
      note: '2x the limit across a boundary',
      mostInAnySecond: 20,
    },
  ],
  calendarWindow: [
    {
      title: 'calendarWindow 10 / day',
      algorithm: calendarWindow({ limit: 10, period: 'day' }),
      maxWaitMs: 0,
      note: 'a quota: nothing more until the day ends',
      mostInAnySecond: 10,
    },
  ],
  slidingWindowLog: [
    {
      title: 'slidingWindowLog 10 / 1 s',
      algorithm: slidingWindowLog({ limit: 10, windowMs: 1_000 }),
      maxWaitMs: 0,
      mostInAnySecond: 10,
    },
  ],
  slidingWindowCounter: [
    {
      title: 'slidingWindowCounter 10 / 1 s',
      algorithm: slidingWindowCounter({ limit: 10, windowMs: 1_000 }),
      maxWaitMs: 0,
      mostInAnySecond: 10,
    },
  ],
  tokenBucket: [
    {
      title: 'tokenBucket 10, 10 / s',
      algorithm: tokenBucket({ capacity: 10, refillPerSecond: 10 }),
      maxWaitMs: 0,
      note: 'burst C on top of the rate',
      mostInAnySecond: 19,
    },
  ],
  gcra: [
    {
      title: 'gcra 10 / s, burst 10',
      algorithm: gcra({ permitsPerSecond: 10, burst: 10 }),
      maxWaitMs: 0,
      mostInAnySecond: 19,
    },
  ],
  leakyBucket: [
    {
      title: 'leakyBucket police 10, 10 / s',
      algorithm: leakyBucket({ capacity: 10, leakPerSecond: 10 }),
      maxWaitMs: 0,
      mostInAnySecond: 19,
    },
    {
      title: 'leakyBucket shape 10, 10 / s',
      algorithm: leakyBucket({ capacity: 10, leakPerSecond: 10, mode: 'shape' }),
      maxWaitMs: Number.POSITIVE_INFINITY,
      note: 'queued, leaves at the rate',
      mostInAnySecond: 10,
    },
  ],
  smoothBursty: [
    {
      title: 'smoothBursty 10 / s (acquire)',
      algorithm: smoothBursty({ permitsPerSecond: 10 }),
      maxWaitMs: Number.POSITIVE_INFINITY,
      note: 'everyone waits, spaced 100 ms',
      mostInAnySecond: 10,
    },
  ],
  smoothWarmingUp: [
    {
      title: 'smoothWarmingUp 10 / s, warm-up 2 s (acquire)',
      algorithm: smoothWarmingUp({ permitsPerSecond: 10, warmupMs: 2_000 }),
      maxWaitMs: Number.POSITIVE_INFINITY,
      note: 'starts 3x slower, speeds up as it is used',
      mostInAnySecond: 10,
    },
  ],
};

/** Every lane, in the order of LANES. */
export const lanes: readonly Lane[] = Object.values(LANES).flat();

export interface Run {
  /** When each admitted request may act (its arrival, or later for a shaped one). */
  readonly admittedAt: number[];
  readonly deniedAt: number[];
  /** The most admissions in any 1 s interval. */
  readonly worstSecond: number;
}

export function simulate(lane: Lane): Run {
  const clock = new ManualClock(0);
  let state: unknown;
  const admittedAt: number[] = [];
  const deniedAt: number[] = [];
  for (const t of traffic()) {
    clock.set(t);
    const out = lane.algorithm.consume(state, clock.now(), 1, lane.maxWaitMs);
    state = out.state;
    if (out.allowed) admittedAt.push(t + out.waitMs);
    else deniedAt.push(t);
  }
  admittedAt.sort((a, b) => a - b);
  let worstSecond = 0;
  for (let i = 0, j = 0; i < admittedAt.length; i++) {
    while ((admittedAt[i] as number) - (admittedAt[j] as number) >= 1_000) j++;
    worstSecond = Math.max(worstSecond, i - j + 1);
  }
  return { admittedAt, deniedAt, worstSecond };
}

const W = 1_100;
const LEFT = 250;
const PLOT = W - LEFT - 30;
const ROW = 54;
const TOP = 64;
const x = (ms: number) => (LEFT + (ms / HORIZON_MS) * PLOT).toFixed(1);

export function render(): string {
  const out: string[] = [];
  const height = TOP + lanes.length * ROW + 40;
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${height}" viewBox="0 0 ${W} ${height}" ` +
      `font-family="system-ui, sans-serif" font-size="13">`,
  );
  out.push('<title>The same traffic through each sluice algorithm</title>');
  out.push(`<rect width="${W}" height="${height}" fill="#fff"/>`);
  out.push(
    `<text x="20" y="26" font-size="16" font-weight="600">The same traffic through each algorithm (limit about ` +
      `10 per second)</text>`,
  );
  out.push(
    `<text x="20" y="46" fill="#555">Traffic: 20 requests in 0.9-1.1 s (across a window boundary), 20 / s from 2 s to 4 s, 15 at once at 4.4 s. ` +
      `<tspan fill="#1a7f37">&#9679; admitted</tspan> (when it may act) <tspan fill="#b0b0b0">| refused</tspan></text>`,
  );
  for (let s = 0; s <= HORIZON_MS; s += 1_000) {
    out.push(`<line x1="${x(s)}" y1="${TOP - 6}" x2="${x(s)}" y2="${TOP + lanes.length * ROW}" stroke="#e4e4e4"/>`);
    out.push(
      `<text x="${x(s)}" y="${TOP + lanes.length * ROW + 18}" text-anchor="middle" fill="#555">${s / 1_000} s</text>`,
    );
  }
  lanes.forEach((lane, i) => {
    const run = simulate(lane);
    const mid = TOP + i * ROW + ROW / 2;
    out.push(`<text x="20" y="${mid - 4}" font-weight="600">${lane.title}</text>`);
    out.push(
      `<text x="20" y="${mid + 13}" fill="#555">most in any 1 s: ${run.worstSecond}; refused ` +
        `${run.deniedAt.length}</text>`,
    );
    if (lane.note !== undefined)
      out.push(`<text x="${LEFT + PLOT}" y="${mid - 14}" text-anchor="end" fill="#8250df">${lane.note}</text>`);
    out.push(`<line x1="${LEFT}" y1="${mid}" x2="${LEFT + PLOT}" y2="${mid}" stroke="#ccc"/>`);
    for (const t of run.deniedAt)
      out.push(`<line x1="${x(t)}" y1="${mid + 4}" x2="${x(t)}" y2="${mid + 16}" stroke="#b0b0b0"/>`);
    for (const t of run.admittedAt)
      out.push(`<circle cx="${x(t)}" cy="${mid - 6}" r="3" fill="#1a7f37" fill-opacity="0.75"/>`);
  });
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}

const target = fileURLToPath(new URL('../docs/algorithms.svg', import.meta.url));
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const svg = render();
  if (process.argv.includes('--check')) {
    const stale = readFileSync(target, 'utf8') !== svg;
    console.log(stale ? 'docs/algorithms.svg is stale: run npm run docs:picture' : 'docs/algorithms.svg is up to date');
    process.exitCode = stale ? 1 : 0;
  } else {
    writeFileSync(target, svg);
    for (const lane of lanes) {
      const run = simulate(lane);
      console.log(
        `${lane.title.padEnd(32)} admitted ${String(run.admittedAt.length).padStart(3)}, refused ` +
          `${String(run.deniedAt.length).padStart(3)}, most in any 1 s ${run.worstSecond}`,
      );
    }
    console.log(`wrote ${target}`);
  }
}
