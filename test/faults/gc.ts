import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

setFlagsFromString('--expose_gc');
const collect = runInNewContext('gc') as () => void;

/** Heap in use after a full collection, in bytes. */
export function heapAfterGc(): number {
  collect();
  collect();
  return process.memoryUsage().heapUsed;
}

/** One full collection (FinalizationRegistry callbacks run in a later task). */
export function collectGarbage(): void {
  collect();
}
