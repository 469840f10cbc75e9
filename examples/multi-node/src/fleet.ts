/**
 * Starts N workers against one Redis and gathers what they report. Used by the example's main, the hybrid
 * tests and bench/hybrid.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Mode, RuleConfig, WorkerConfig, WorkerReport } from './worker-config.js';

const worker = fileURLToPath(new URL('./worker.ts', import.meta.url));

export interface FleetOptions {
  readonly nodes: number;
  readonly mode: Mode;
  readonly redisUrl: string;
  readonly rule: RuleConfig;
  readonly durationMs: number;
  /** Saturating callers per worker (ignored for paced workers). @default 64 */
  readonly inFlight?: number;
  /** Paced load per worker (requests per second); saturating where undefined. */
  readonly offeredPerSecond?: readonly (number | undefined)[];
  readonly share?: 'equal' | 'demand';
  readonly heartbeatMs?: number;
  readonly recordTimes?: boolean;
  /** SIGKILL this worker this long after the start. */
  readonly kill?: { readonly node: number; readonly afterMs: number };
  /** Told the common start time (wall-clock ms) as soon as it is chosen. */
  readonly onStart?: (startAt: number) => void;
  /** Every report as it arrives. */
  readonly onReport?: (node: number, report: WorkerReport) => void;
}

export interface NodeResult {
  readonly decisions: number;
  readonly admitted: number;
  readonly times: number[];
  /** Permits this node took from the central state (leased mode): its leases, and its exact decisions of cold keys. */
  readonly leased: number;
  readonly fallbacks: number;
  readonly killed: boolean;
}

export interface FleetResult {
  readonly startAt: number;
  readonly nodes: NodeResult[];
  readonly prefix: string;
}

export async function runFleet(options: FleetOptions): Promise<FleetResult> {
  // The common start time is chosen once every worker reported ready (tsx compiles on start, slowly on a
  // loaded machine), and sent to each on its stdin.
  let startAt = 0;
  let ready = 0;
  let started: () => void = () => {};
  const allStarted = new Promise<void>((resolve) => {
    started = resolve;
  });
  const prefix = `fleet-${options.mode}-${Date.now()}`;
  const children: ChildProcess[] = [];
  const onReady = () => {
    if (++ready < options.nodes) return;
    startAt = Date.now() + 100;
    for (const child of children) child.stdin?.end(`${startAt}\n`);
    options.onStart?.(startAt);
    started();
  };
  const results = Array.from({ length: options.nodes }, (_, node) => {
    const config: WorkerConfig = {
      mode: options.mode,
      redisUrl: options.redisUrl,
      prefix,
      rule: options.rule,
      nodeId: `node-${node}`,
      durationMs: options.durationMs,
      inFlight: options.inFlight ?? 64,
      ...(options.offeredPerSecond?.[node] === undefined ? {} : { offeredPerSecond: options.offeredPerSecond[node] }),
      ...(options.share === undefined ? {} : { share: options.share }),
      ...(options.heartbeatMs === undefined ? {} : { heartbeatMs: options.heartbeatMs }),
      ...(options.recordTimes ? { recordTimes: true } : {}),
    };
    const child = spawn(process.execPath, ['--conditions=sluice-source', '--import', 'tsx', worker], {
      env: { ...process.env, SLUICE_WORKER: JSON.stringify(config) },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    children.push(child);
    return new Promise<NodeResult>((resolve, reject) => {
      const result = { decisions: 0, admitted: 0, times: [] as number[], leased: 0, fallbacks: 0, killed: false };
      let buffered = '';
      let err = '';
      child.stdout?.on('data', (chunk: Buffer) => {
        buffered += chunk.toString();
        const lines = buffered.split('\n');
        buffered = lines.pop() ?? '';
        for (const line of lines) {
          if (line.trim() === '') continue;
          const report = JSON.parse(line) as WorkerReport;
          options.onReport?.(node, report);
          if (report.type === 'ready') onReady();
          else if (report.type === 'tick') {
            result.decisions += report.decisions;
            result.admitted += report.admitted;
            if (report.times) for (const t of report.times) result.times.push(t);
          } else if (report.type === 'lease') result.leased += report.granted;
          else if (report.type === 'done') result.fallbacks = report.fallbacks;
        }
      });
      child.stderr?.on('data', (chunk: Buffer) => (err += chunk.toString()));
      child.on('exit', (code, signal) => {
        if (signal === 'SIGKILL' && options.kill?.node === node) resolve({ ...result, killed: true });
        else if (code === 0) resolve(result);
        else reject(new Error(`worker ${node} exited with ${code ?? signal}: ${err}`));
      });
    });
  });
  let killTimer: ReturnType<typeof setTimeout> | undefined;
  const kill = options.kill;
  if (kill !== undefined) {
    void allStarted.then(() => {
      killTimer = setTimeout(() => children[kill.node]?.kill('SIGKILL'), startAt + kill.afterMs - Date.now());
    });
  }
  try {
    const nodes = await Promise.all(results);
    return { startAt, nodes, prefix };
  } finally {
    clearTimeout(killTimer);
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}

/** Admissions per whole second of the run, for the fleet. */
export function perSecond(result: FleetResult, seconds: number): number[] {
  const counts = new Array<number>(seconds).fill(0);
  for (const node of result.nodes) {
    for (const t of node.times) {
      const s = Math.floor((t - result.startAt) / 1000);
      if (s >= 0 && s < seconds) counts[s] = (counts[s] as number) + 1;
    }
  }
  return counts;
}
