/** Measures one subject in one scenario (or its heap per key) in this fresh process; prints one JSON line. */
import { measure } from 'mitata';
import { HEAP_SUBJECTS, KEYS, SUBJECTS, type Scenario } from './core-subjects.js';
import { BATCH, gc } from './harness.js';
import { measureAllocation, measureInFlight } from './core-inflight.js';

const [mode, subjectId, scenario] = process.argv.slice(2);

if (mode === 'inflight') {
  console.log(JSON.stringify(await measureInFlight(subjectId as string)));
} else if (mode === 'alloc') {
  console.log(JSON.stringify(await measureAllocation(subjectId as string)));
} else if (mode === 'heap') {
  const subject = HEAP_SUBJECTS[subjectId as string];
  if (!subject) throw new Error(`unknown heap subject ${subjectId}`);
  gc();
  const before = process.memoryUsage().heapUsed;
  const keep = await subject.fill(KEYS);
  gc();
  const bytesPerKey = (process.memoryUsage().heapUsed - before) / KEYS;
  console.log(JSON.stringify({ bytesPerKey, kept: keep !== undefined }));
} else {
  const subject = SUBJECTS.find((s) => s.id === subjectId);
  const batch = subject?.setup(scenario as Scenario);
  if (!batch) throw new Error(`no ${subjectId} for ${scenario}`);
  const stats = await measure(batch, { min_cpu_time: 600e6, max_samples: 2_000 });
  console.log(JSON.stringify({ nsPerDecision: stats.p50 / BATCH }));
}
