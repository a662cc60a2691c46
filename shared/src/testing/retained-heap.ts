// How many bytes of heap `work` leaves reachable once it has finished: a full collection before and after
// (gc exposed at run time, as test/integration/compute-scale.test.ts does), so garbage does not count.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

setFlagsFromString('--expose-gc');
const collect = runInNewContext('gc') as () => void;

export async function retainedBytes(work: () => Promise<void>): Promise<number> {
  collect();
  const before = process.memoryUsage().heapUsed;
  await work();
  collect();
  return process.memoryUsage().heapUsed - before;
}
