// The `proxyplane` CLI as a user runs it: node bin/proxyplane.mjs as a real process, with only what a
// user's shell would have (no emulator hosts, no gcloud, no running plane's state), its exit code and
// output. test/integration/cli-apply.test.ts uses it; cli.test.ts has the same runner inline.
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from '../../shared/src/config/local-ports.js';

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

export interface CliRunner {
  (args: string[], env?: Record<string, string>, stdin?: string): Promise<CliRun>;
  /** Writes `text` to `name` in the runner's directory and returns the path. */
  file(name: string, text: string): string;
}

/** A runner against `apiUrl()` with the admin token, in `dir` (also its state directory). */
export function cliRunner(o: { dir: string; apiUrl: () => string; adminToken: string }): CliRunner {
  const run = (args: string[], env: Record<string, string> = {}, stdin?: string) =>
    new Promise<CliRun>((resolve) => {
      const child = execFile(
        process.execPath,
        [join(repoRoot, 'bin/proxyplane.mjs'), ...args],
        {
          cwd: o.dir,
          timeout: 60_000,
          env: {
            PATH: '/usr/bin:/bin',
            METADATA_SERVER_DETECTION: 'none',
            PROXYPLANE_STATE_DIR: o.dir,
            PROXYPLANE_API_URL: o.apiUrl(),
            PROXYPLANE_ADMIN_TOKEN: o.adminToken,
            ...env,
          },
        },
        (err, stdout, stderr) =>
          resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      );
      if (stdin !== undefined) child.stdin!.end(stdin);
    });
  return Object.assign(run, {
    file(name: string, text: string): string {
      const path = join(o.dir, name);
      writeFileSync(path, text);
      return path;
    },
  });
}
