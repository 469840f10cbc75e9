/**
 * The bench's pictures, drawn from its JSON results (and nothing else, so the committed pictures can be
 * checked against the committed results): the fleet's admissions over time in each mode, and decisions
 * per second against the peers.
 */
import { niceStep, px, shortNumber, svgDocument, text } from './svg.js';

/** What bench/results/hybrid.json holds for the timeline (hybrid.bench.ts writes it). */
export interface FleetTimelines {
  readonly nodes: number;
  readonly bucketMs: number;
  readonly capacity: number;
  readonly rate: number;
  readonly seconds: number;
  /** Admissions per bucket from the common start, per mode. */
  readonly series: Readonly<Record<string, readonly number[]>>;
}

const COLORS: Record<string, string> = { exact: '#0969da', leased: '#1a7f37', divided: '#8250df' };

/** Admissions per bucket over time, one lane per mode, with the limit per bucket drawn. */
export function fleetTimelinePlot(t: FleetTimelines): string {
  const width = 1_000;
  const left = 110;
  const plotWidth = width - left - 30;
  const laneHeight = 150;
  const top = 70;
  const modes = Object.keys(t.series);
  const perBucket = (t.rate * t.bucketMs) / 1_000;
  // The first bucket holds the bucket's burst (capacity) on top of the rate: clipped, and labelled.
  const yMax = 2.5 * perBucket;
  const buckets = Math.ceil((t.seconds * 1_000) / t.bucketMs);
  const x = (bucket: number) => left + (bucket / buckets) * plotWidth;
  const body: string[] = [];
  body.push(
    text(
      20,
      26,
      `Admissions per ${t.bucketMs} ms: ${t.nodes} processes saturating one token bucket (capacity ` +
        `${shortNumber(t.capacity)}, ${shortNumber(t.rate)} / s)`,
      'font-size="16" font-weight="600"',
    ),
  );
  body.push(
    text(
      20,
      46,
      `The dashed line is the limit per ${t.bucketMs} ms (rate x ${t.bucketMs} ms); the first ${t.bucketMs} ms ` +
        `also spends the initial burst.`,
      'fill="#555"',
    ),
  );
  modes.forEach((mode, i) => {
    const series = t.series[mode] ?? [];
    const y0 = top + i * (laneHeight + 30) + laneHeight;
    const y = (v: number) => y0 - (Math.min(v, yMax) / yMax) * laneHeight;
    const color = COLORS[mode] ?? '#333';
    const total = series.reduce((a, b) => a + b, 0);
    const allowed = t.capacity + t.rate * t.seconds;
    body.push(text(20, y0 - laneHeight / 2, mode, `font-weight="600" fill="${color}"`));
    body.push(text(20, y0 - laneHeight / 2 + 17, `${((100 * total) / allowed).toFixed(1)}% of C + R*T`, 'fill="#555"'));
    for (let v = 0; v <= yMax; v += niceStep(yMax, 4)) {
      body.push(`<line x1="${left}" y1="${px(y(v))}" x2="${left + plotWidth}" y2="${px(y(v))}" stroke="#eee"/>`);
      body.push(text(left - 6, y(v) + 4, shortNumber(v), 'text-anchor="end" fill="#777" font-size="11"'));
    }
    const points = series.slice(0, buckets).map((v, b) => `${px(x(b))},${px(y(v))} ${px(x(b + 1))},${px(y(v))}`);
    body.push(`<polyline fill="none" stroke="${color}" stroke-width="1.5" points="${points.join(' ')}"/>`);
    body.push(
      `<line x1="${left}" y1="${px(y(perBucket))}" x2="${left + plotWidth}" y2="${px(y(perBucket))}" ` +
        `stroke="#cf222e" stroke-dasharray="6 4"/>`,
    );
    const first = series[0] ?? 0;
    if (first > yMax)
      body.push(
        text(
          x(1) + 4,
          y(yMax) + 12,
          `first ${t.bucketMs} ms: ${shortNumber(first)} (burst)`,
          `fill="${color}" font-size="11"`,
        ),
      );
    body.push(`<line x1="${left}" y1="${y0}" x2="${left + plotWidth}" y2="${y0}" stroke="#999"/>`);
  });
  const bottom = top + modes.length * (laneHeight + 30) - 30;
  for (let s = 0; s <= t.seconds; s++) {
    const xs = x((s * 1_000) / t.bucketMs);
    body.push(text(xs, bottom + 18, `${s} s`, 'text-anchor="middle" fill="#555"'));
  }
  return svgDocument(`Admissions per ${t.bucketMs} ms in ${modes.join(', ')} mode`, width, bottom + 36, body);
}

export interface PeerBar {
  readonly label: string;
  readonly value: number;
  readonly kind: 'sluice' | 'peer' | 'floor';
}

export interface PeerGroup {
  readonly title: string;
  readonly bars: readonly PeerBar[];
}

const BAR_COLORS: Record<PeerBar['kind'], string> = { sluice: '#1a7f37', peer: '#8c959f', floor: '#54aeff' };

/** Decisions per second, one group of horizontal bars per workload, each group on its own scale. */
export function peersPlot(title: string, subtitle: string, groups: readonly PeerGroup[]): string {
  const width = 1_000;
  const left = 330;
  const plotWidth = width - left - 90;
  const barHeight = 18;
  const body: string[] = [];
  body.push(text(20, 26, title, 'font-size="16" font-weight="600"'));
  body.push(text(20, 46, subtitle, 'fill="#555"'));
  body.push(
    `<text x="20" y="64" fill="#555"><tspan fill="${BAR_COLORS.sluice}">&#9632; sluice</tspan>  <tspan ` +
      `fill="${BAR_COLORS.peer}">&#9632; other libraries</tspan>  <tspan fill="${BAR_COLORS.floor}">&#9632; floor ` +
      `(the least a Redis call costs)</tspan></text>`,
  );
  let y = 90;
  for (const group of groups) {
    body.push(text(20, y + 4, group.title, 'font-weight="600"'));
    y += 14;
    const max = Math.max(...group.bars.map((b) => b.value));
    for (const bar of group.bars) {
      const w = max > 0 ? (bar.value / max) * plotWidth : 0;
      body.push(text(left - 8, y + barHeight - 5, bar.label, 'text-anchor="end"'));
      body.push(
        `<rect x="${left}" y="${px(y)}" width="${px(w)}" height="${barHeight}" fill="${BAR_COLORS[bar.kind]}"/>`,
      );
      body.push(text(left + w + 6, y + barHeight - 5, `${shortNumber(bar.value)}/s`, 'fill="#333"'));
      y += barHeight + 4;
    }
    y += 18;
  }
  return svgDocument(title, width, Math.ceil(y), body);
}

/** bench/results/core.json's rows, as far as the peers plot reads them. */
export interface CoreRow {
  readonly scenario: string;
  readonly subject: string;
  readonly label: string;
  readonly decisionsPerSecond: number;
}

/** bench/results/redis.json's rows, as far as the peers plot reads them. */
export interface RedisRow {
  readonly subject: string;
  readonly keys: string;
  readonly inFlight: number;
  readonly decisionsPerSecond: number;
}

const LOCAL_SUBJECTS = ['fixedWindow', 'tokenBucket', 'gcra', 'rlf', 'limiter'];

/** Local mode against the in-process peers, for each core scenario. */
export function localPeersPlot(rows: readonly CoreRow[]): string {
  const scenarios = [...new Set(rows.map((r) => r.scenario))];
  const groups = scenarios.map((scenario) => ({
    title: scenario,
    bars: LOCAL_SUBJECTS.flatMap((subject) => {
      const row = rows.find((r) => r.scenario === scenario && r.subject === subject);
      return row === undefined
        ? []
        : [
            {
              label: row.label,
              value: row.decisionsPerSecond,
              kind: row.label.startsWith('sluice') ? ('sluice' as const) : ('peer' as const),
            },
          ];
    }),
  }));
  return peersPlot(
    'Local mode: decisions per second, one process',
    'Each awaited in turn; allowed: every decision a grant, limited: most decisions denials; 100k: keys visited ' +
      'round robin; 10k-random: 10,000 keys in a random order.',
    groups,
  );
}

/** Exact mode against the Redis peers (ioredis), for each workload. */
export function redisPeersPlot(rows: readonly RedisRow[]): string {
  const ioredis = rows.filter((r) => !r.subject.startsWith('node-redis'));
  const workloads = [...new Set(ioredis.map((r) => `${r.keys}|${r.inFlight}`))];
  const groups = workloads.map((workload) => {
    const [keys, inFlight] = workload.split('|');
    return {
      title: `${keys}, ${inFlight} in flight`,
      bars: ioredis
        .filter((r) => `${r.keys}|${r.inFlight}` === workload)
        .map((r) => ({
          label: r.subject,
          value: r.decisionsPerSecond,
          kind: r.subject.startsWith('sluice')
            ? ('sluice' as const)
            : r.subject.includes('floor')
              ? ('floor' as const)
              : ('peer' as const),
        })),
    };
  });
  return peersPlot(
    'Exact mode on Redis: decisions per second, one process, ioredis',
    'One redis-server on this machine; in flight: concurrent callers.',
    groups,
  );
}

/** bench/results/fleet.json's rows, as far as the fleet-scale plot reads them (fleet.bench.ts writes them). */
export interface FleetScaleRow {
  readonly scenario: string;
  readonly mode: string;
  readonly nodes: number;
  readonly redisUsPerDecision: number;
  readonly utilisationMean: number;
}

/**
 * Two panels against the fleet's size (a log scale of nodes), one line per mode, for one scenario: Redis CPU
 * per decision, and the share of the ideal admitted in the steady seconds.
 */
export function fleetScalePlot(rows: readonly FleetScaleRow[], scenario: string): string {
  const chosen = rows.filter((r) => r.scenario === scenario);
  const modes = [...new Set(chosen.map((r) => r.mode))];
  const sizes = [...new Set(chosen.map((r) => r.nodes))].sort((a, b) => a - b);
  const width = 1_000;
  const panelWidth = 400;
  const panelHeight = 260;
  const top = 90;
  const lefts = [80, 80 + panelWidth + 110];
  const body: string[] = [];
  body.push(
    text(
      20,
      26,
      `At fleet scale (${scenario} load): Redis cost and use of the limit`,
      'font-size="16" font-weight="600"',
    ),
  );
  body.push(
    text(
      20,
      46,
      'N nodes in one process sharing 4 clients, one token bucket of 4,000/s offered 4,800/s (bench/src/fleet.bench.ts).',
      'fill="#555"',
    ),
  );
  body.push(
    `<text x="20" y="66" fill="#555">${modes
      .map((m) => `<tspan fill="${COLORS[m] ?? '#333'}">&#9632; ${m}</tspan>`)
      .join('  ')}</text>`,
  );
  const logX = (n: number, left: number) => {
    const lo = Math.log(sizes[0] ?? 1);
    const hi = Math.log(sizes[sizes.length - 1] ?? 2);
    return left + ((Math.log(n) - lo) / Math.max(hi - lo, 1e-9)) * panelWidth;
  };
  const panels = [
    { title: 'Redis CPU per decision (us)', value: (r: FleetScaleRow) => r.redisUsPerDecision, percent: false },
    {
      title: 'Admitted of the ideal, steady seconds (%)',
      value: (r: FleetScaleRow) => 100 * r.utilisationMean,
      percent: true,
    },
  ];
  panels.forEach((panel, p) => {
    const left = lefts[p] as number;
    const values = chosen.map(panel.value);
    const yMax = panel.percent ? 105 : Math.max(...values, 1) * 1.1;
    const yMin = panel.percent ? Math.min(80, ...values) : 0;
    const y = (v: number) => top + panelHeight - ((v - yMin) / (yMax - yMin)) * panelHeight;
    body.push(text(left, top - 12, panel.title, 'font-weight="600"'));
    const step = niceStep(yMax - yMin, 5);
    for (let v = Math.ceil(yMin / step) * step; v <= yMax; v += step) {
      body.push(`<line x1="${left}" y1="${px(y(v))}" x2="${left + panelWidth}" y2="${px(y(v))}" stroke="#eee"/>`);
      body.push(text(left - 6, y(v) + 4, shortNumber(v), 'text-anchor="end" fill="#777" font-size="11"'));
    }
    for (const n of sizes)
      body.push(text(logX(n, left), top + panelHeight + 18, `${n}`, 'text-anchor="middle" fill="#555"'));
    body.push(text(left + panelWidth / 2, top + panelHeight + 36, 'nodes', 'text-anchor="middle" fill="#555"'));
    for (const mode of modes) {
      const line = chosen.filter((r) => r.mode === mode).sort((a, b) => a.nodes - b.nodes);
      const color = COLORS[mode] ?? '#333';
      const points = line.map((r) => `${px(logX(r.nodes, left))},${px(y(panel.value(r)))}`);
      body.push(`<polyline fill="none" stroke="${color}" stroke-width="2" points="${points.join(' ')}"/>`);
      for (const r of line)
        body.push(`<circle cx="${px(logX(r.nodes, left))}" cy="${px(y(panel.value(r)))}" r="3" fill="${color}"/>`);
    }
  });
  return svgDocument(`At fleet scale (${scenario})`, width, top + panelHeight + 50, body);
}
