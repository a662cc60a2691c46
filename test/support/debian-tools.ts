// Tools some integration tests run as real processes — squid as a managed VM runs it, the curl, jq,
// openssl and ss its startup script uses, shellcheck on that script — installed from Debian when missing,
// so that a fresh machine (CI) runs those tests instead of skipping them. The global setup starts one
// apt-get (update, then install) in the background while the unit tier runs; a file that needs a tool
// waits for that install (bounded) at import, and skips with the reason only where apt cannot help: not
// root, no apt-get, or the install failed.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** Each tool a test may need, and the Debian package that brings it. */
const PACKAGE_OF = {
  squid: 'squid',
  openssl: 'openssl',
  curl: 'curl',
  jq: 'jq',
  ss: 'iproute2',
  base64: 'coreutils',
  shellcheck: 'shellcheck',
} as const;

export type Tool = keyof typeof PACKAGE_OF;

/** Where the global setup tells the test workers (which inherit its environment) how the install went. */
const OUTCOME_ENV = 'PROXYPLANE_TEST_TOOLS_OUTCOME';

export const hasTool = (name: string): boolean =>
  spawnSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' }).status === 0;

export const isRoot = (): boolean => process.getuid?.() === 0;

const missingOf = (tools: readonly Tool[]): Tool[] => tools.filter((t) => !hasTool(t));

function apt(args: string[], timeoutMs: number): Promise<number | null> {
  return new Promise((resolve) => {
    const child = spawn('apt-get', ['-q', '-y', '-o', 'DPkg::Lock::Timeout=300', ...args], {
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
      stdio: 'ignore',
      timeout: timeoutMs,
    });
    child.once('error', () => resolve(null));
    child.once('close', (code) => resolve(code));
  });
}

/**
 * For the global setup: installs the packages of the missing tools in the background and returns at
 * once; the promise settles when apt is done (the teardown awaits it: an apt-get killed mid-install
 * leaves dpkg to repair). Either way the outcome is written where toolsMissing finds it.
 */
export function startToolInstall(): Promise<void> {
  const outcome = join(mkdtempSync(join(tmpdir(), 'pp-tools-')), 'outcome.json');
  process.env[OUTCOME_ENV] = outcome;
  // Written whole, then renamed: a worker waiting for the file never reads half of it.
  const done = (failure: string | null) => {
    writeFileSync(`${outcome}.tmp`, JSON.stringify({ failure }));
    renameSync(`${outcome}.tmp`, outcome);
  };
  const missing = missingOf(Object.keys(PACKAGE_OF) as Tool[]);
  if (missing.length === 0) return Promise.resolve(done(null));
  if (!isRoot() || !hasTool('apt-get')) return Promise.resolve(done('apt-get unusable (not root)'));
  const packages = [...new Set(missing.map((t) => PACKAGE_OF[t]))];
  return (async () => {
    // The package lists of a fresh machine may be missing or stale; an update failing (offline) still
    // leaves whatever lists there are to install from.
    await apt(['update'], 300_000);
    const code = await apt(['install', '--no-install-recommends', ...packages], 600_000);
    servicesOff(packages);
    done(code === 0 ? null : `apt-get install ${packages.join(' ')} failed (status ${code})`);
  })();
}

/** A command the install's cleanup runs (spawnSync's shape, so a test can record them instead). */
export type Run = (cmd: string, args: string[]) => unknown;
const runQuietly: Run = (cmd, args) => spawnSync(cmd, args, { stdio: 'ignore', timeout: 60_000 });

/**
 * After an install of `packages`, the services it started and enabled are stopped and disabled: Debian's
 * squid postinst starts squid on 0.0.0.0:3128 and enables it, which took the emulated VMs' proxy port on
 * every 127.x.y.z — `npm start` after `npm test` refused to start, after every reboot too. The tests need
 * the binary only, and the package was not on the machine before this install, so its service is not the
 * machine's own. Best effort, each tool where it exists: systemd (running or not: deb-systemd-helper
 * disables for the next boot), then sysvinit. A run killed mid-install leaves what Debian left — a
 * running squid, which `npm start` names with the command to stop it — and nothing else.
 */
export function servicesOff(packages: readonly string[], run: Run = runQuietly): void {
  if (!packages.includes('squid')) return;
  run('systemctl', ['disable', '--now', 'squid.service']);
  run('deb-systemd-helper', ['disable', 'squid.service']);
  run('update-rc.d', ['squid', 'disable']);
  run('invoke-rc.d', ['squid', 'stop']);
}

/**
 * '' when every one of `tools` is there — waiting, up to `timeoutMs`, for the global setup's install
 * when one is missing — and otherwise what is missing and why.
 */
export async function toolsMissing(tools: readonly Tool[], timeoutMs = 600_000): Promise<string> {
  if (missingOf(tools).length === 0) return '';
  const outcome = process.env[OUTCOME_ENV];
  let failure: string | null = 'no install was started';
  if (outcome) {
    for (let waited = 0; waited < timeoutMs && !existsSync(outcome); waited += 500) await sleep(500);
    failure = existsSync(outcome)
      ? (JSON.parse(readFileSync(outcome, 'utf8')) as { failure: string | null }).failure
      : `the install did not finish within ${timeoutMs} ms`;
  }
  const missing = missingOf(tools);
  if (missing.length === 0) return '';
  return `missing ${missing.join(', ')}${failure ? ` (${failure})` : ''}`;
}
