// Dispatch: `proxyplane <group> <verb> [args]` → the command, with one exit code per outcome
// (errors.ts). Pure of process globals: main.ts passes argv, env and the real Io.
import { hoistGlobalFlags, type Parsed, parseCommand } from './args.js';
import {
  applyOptions,
  applyProxies,
  cordonProxy,
  patchOptions,
  patchProxy,
  reconcileProxy,
} from './commands/apply.js';
import { watchFleet, watchOptions } from './commands/fleet-watch.js';
import {
  listWorkers,
  reclaimOptions,
  reclaimProxy,
  showOwnership,
  unreclaimProxy,
  workersOptions,
} from './commands/gateway.js';
import { jobAction, listJobs } from './commands/jobs.js';
import {
  acquireLease,
  leaseOptions,
  releaseLease,
  renewLease,
  renewOptions,
  reportLease,
  reportOptions,
} from './commands/leases.js';
import { createProxies, deleteProxy, getProxy, listProxies, proxyOptions } from './commands/proxies.js';
import { applyRouting, getRouting, routingApplyOptions } from './commands/routing.js';
import { apiUrlNamed, type CliEnv, resolveApiUrl, type TokenSources } from './config.js';
import type { Command, Io } from './context.js';
import { UsageError } from './errors.js';
import { describeFailure } from './hints.js';
import { ApiClient } from './http.js';
import { visible } from './output.js';
import { USAGE } from './usage.js';

type Options = Parameters<typeof parseCommand>[1];

const COMMANDS: Record<string, Record<string, { run: Command; options: Options }>> = {
  proxies: {
    create: { run: createProxies, options: { file: proxyOptions.file } },
    list: {
      run: listProxies,
      options: {
        attr: proxyOptions.attr,
        phase: proxyOptions.phase,
        protocol: proxyOptions.protocol,
        'page-size': proxyOptions['page-size'],
      },
    },
    get: { run: getProxy, options: {} },
    delete: { run: deleteProxy, options: {} },
    apply: { run: applyProxies, options: applyOptions },
    patch: { run: patchProxy, options: patchOptions },
    cordon: { run: cordonProxy(true), options: {} },
    uncordon: { run: cordonProxy(false), options: {} },
    reconcile: { run: reconcileProxy, options: {} },
  },
  leases: {
    acquire: { run: acquireLease, options: leaseOptions },
    renew: { run: renewLease, options: renewOptions },
    report: { run: reportLease, options: reportOptions },
    release: { run: releaseLease, options: {} },
  },
  fleet: { watch: { run: watchFleet, options: watchOptions } },
  routing: {
    get: { run: getRouting, options: {} },
    apply: { run: applyRouting, options: routingApplyOptions },
  },
  gateway: {
    workers: { run: listWorkers, options: workersOptions },
    ownership: { run: showOwnership, options: {} },
    reclaim: { run: reclaimProxy, options: reclaimOptions },
    unreclaim: { run: unreclaimProxy, options: {} },
  },
  jobs: {
    list: { run: listJobs, options: {} },
    run: { run: jobAction('run'), options: {} },
    pause: { run: jobAction('pause'), options: {} },
    resume: { run: jobAction('resume'), options: {} },
  },
};

export interface RunDeps {
  io: Io;
  env: CliEnv;
  tokens: TokenSources;
  fetch?: typeof fetch;
}

/**
 * The Io every command prints through: each control character reaches the terminal escaped (output.ts
 * visible), whoever wrote the string — an attribute value, a job name, an error message the API quoted.
 * `-o json` and `-o yaml` still read back unchanged: JSON.stringify escapes C0 controls, and so do the
 * yaml package's double quotes (which it gives any string holding a control character); the DEL and C1
 * controls both leave raw can only be inside such a string, where `\u009b` is the same value. A control
 * character in `-o env` or `-o url` (which no proxy URL holds) is shown escaped too, not eval'd raw.
 */
function visibleIo(io: Io): Io {
  return { ...io, out: (text) => io.out(visible(text)), err: (text) => io.err(visible(text)) };
}

export async function runCli(argv: string[], deps: RunDeps): Promise<number> {
  const io = visibleIo(deps.io);
  try {
    const [group, verb, ...rest] = hoistGlobalFlags(argv);
    if (group === undefined) {
      // No command: bad usage, so the usage goes where errors go (stdout stays for what a command prints).
      io.err(USAGE);
      return 2;
    }
    if (group === '--help' || group === '-h' || group === 'help') {
      io.out(USAGE);
      return 0;
    }
    const verbs = COMMANDS[group];
    if (!verbs) {
      throw new UsageError(
        group.startsWith('-')
          ? `unknown flag "${group}" before the command: only --api and -o/--output go there; the command's own flags go after it (proxyplane <command> [flags])`
          : `unknown command "${group}"`,
      );
    }
    if (verb === '--help' || verb === '-h') {
      io.out(USAGE);
      return 0;
    }
    const cmd = verb === undefined ? undefined : verbs[verb];
    if (!cmd) {
      const known = Object.keys(verbs).join(', ');
      throw new UsageError(
        verb === undefined || verb.startsWith('-')
          ? `${group} needs one of: ${known}`
          : `unknown command "${group} ${verb}" (one of: ${known})`,
      );
    }
    const args: Parsed = parseCommand(rest, cmd.options);
    if (args.values.help) {
      io.out(USAGE);
      return 0;
    }
    let baseUrl: string;
    try {
      baseUrl = resolveApiUrl(args.values.api as string | undefined, deps.env);
    } catch (err) {
      throw new UsageError(`--api / PROXYPLANE_API_URL: ${(err as Error).message}`, { cause: err });
    }
    const urlNamed = apiUrlNamed(args.values.api as string | undefined, deps.env);
    const api = new ApiClient({ baseUrl, tokens: deps.tokens, fetch: deps.fetch, urlNamed });
    await cmd.run({ api, io, env: deps.env, args });
    return 0;
  } catch (err) {
    const { lines, exitCode } = describeFailure(err);
    for (const l of lines) io.err(l);
    return exitCode;
  }
}
