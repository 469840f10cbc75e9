/** Measures one in-flight subject (core-inflight.ts) in this fresh process; prints one JSON line. */
import { measureAllocation, measureInFlight } from './core-inflight.js';

const [mode, subjectId] = process.argv.slice(2);
const measured =
  mode === 'alloc' ? await measureAllocation(subjectId as string) : await measureInFlight(subjectId as string);
console.log(JSON.stringify(measured));
