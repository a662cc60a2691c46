// Which functions of shared/topology/functions.json exist yet, and hosting a set of them at once.
// Functions are written in parallel by several people; the plane hosts what is built and says what is not.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { FunctionTable } from '../../shared/src/config/topology.js';
import {
  entryFile,
  type FunctionSource,
  type HostedFunction,
  type HostFunctionOptions,
  hostFunction,
} from '../functions-host/host.js';

export interface FunctionInventory {
  built: FunctionSource[];
  /** Functions whose src/index.ts does not exist yet, with the file looked for. */
  missing: Array<{ name: string; entry: string }>;
}

export function functionInventory(
  table: FunctionTable,
  exists: (path: string) => boolean = existsSync,
): FunctionInventory {
  const inventory: FunctionInventory = { built: [], missing: [] };
  for (const [name, spec] of Object.entries(table.functions)) {
    const entry = entryFile(spec.source);
    if (exists(entry)) {
      inventory.built.push({
        name,
        source: spec.source,
        target: spec.target,
        timeoutSeconds: spec.timeoutSeconds,
      });
    } else {
      inventory.missing.push({ name, entry });
    }
  }
  return inventory;
}

export interface HostAllOptions {
  portFor(name: string): number;
  host: string;
  env: Record<string, string>;
  logDir: string;
  /** Each function, once all are up (none when one fails: the others are stopped, not up). */
  onUp?: (fn: HostedFunction) => void;
  onSpawn?: (name: string, stop: () => Promise<void>) => void;
  /** Starts one function; hostFunction unless a test gives its own. */
  start?: (o: HostFunctionOptions) => Promise<HostedFunction>;
}

/** Hosts every function in parallel; if one fails, stops the others and rethrows. */
export async function hostFunctions(fns: FunctionSource[], opts: HostAllOptions): Promise<HostedFunction[]> {
  const start = opts.start ?? hostFunction;
  const results = await Promise.allSettled(
    fns.map((fn) =>
      start({
        fn,
        port: opts.portFor(fn.name),
        host: opts.host,
        env: opts.env,
        logFile: join(opts.logDir, `function-${fn.name}.log`),
        onSpawn: (stop) => opts.onSpawn?.(fn.name, stop),
      }),
    ),
  );
  const up = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const failed = results.flatMap((r) => (r.status === 'rejected' ? [r.reason] : []));
  if (failed.length > 0) {
    await Promise.all(up.map((f) => f.stop()));
    throw failed.length === 1
      ? failed[0]
      : new AggregateError(failed, `${failed.length} functions failed to start`);
  }
  // Only now: `npm start` watches a function from its onUp, and a sibling stopped above because another
  // failed was reported as having "exited unexpectedly", burying the one failure that mattered.
  for (const fn of up) opts.onUp?.(fn);
  return up;
}
