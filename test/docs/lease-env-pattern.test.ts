// The documented way to use `leases acquire -o env` (docs/cli.md, the lines `npm start` prints) stops when
// the acquire fails: `eval "$(… -o env)"` evaluated the empty output successfully and the next `curl` went
// on with the previous lease's proxy URL. Run in bash as printed, with stand-ins for npx and curl on PATH.
import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { demoInstructions } from '../../emulators/local-plane/demo-instructions.js';
import { repoRoot } from '../../shared/src/config/local-ports.js';

const run = promisify(execFile);
const bin = mkdtempSync(join(tmpdir(), 'lease-env-'));

afterAll(() => rmSync(bin, { recursive: true, force: true }));

/** `npx proxyplane leases acquire …` as it answers (exit 0 with assignments, or exit 1 with nothing on
 *  stdout); `curl` says where it would have gone. */
function standIns(acquireWorks: boolean): void {
  const npx = acquireWorks
    ? `case "$*" in *"leases acquire"*) echo "PROXYPLANE_LEASE_ID='new-lease'"; echo "PROXYPLANE_PROXY_URL='http://u:p@127.0.0.2:3128'";; esac`
    : `case "$*" in *"leases acquire"*) echo 'error: no_match — no proxy can be leased now' >&2; exit 1;; esac`;
  writeFileSync(join(bin, 'npx'), `#!/bin/sh\n${npx}\nexit 0\n`);
  writeFileSync(
    join(bin, 'curl'),
    '#!/bin/sh\nfor a; do case "$a" in -x) p=1;; *) [ -n "$p" ] && echo "curl via $a" && p=;; esac; done\n',
  );
  chmodSync(join(bin, 'npx'), 0o755);
  chmodSync(join(bin, 'curl'), 0o755);
}

async function sh(script: string, flags: string[]): Promise<string> {
  const r = await run('bash', [...flags, '-c', script], {
    env: {
      PATH: `${bin}:/usr/bin:/bin`,
      // What an earlier, successful acquire left in the shell.
      PROXYPLANE_PROXY_URL: 'http://old:secret@127.0.0.9:3128',
      PROXYPLANE_LEASE_ID: 'old-lease',
    },
  }).catch((err: { stdout: string }) => err);
  return r.stdout;
}

const cliDoc = readFileSync(join(repoRoot, 'docs/cli.md'), 'utf8');
/** docs/cli.md's first example: the acquire line and the one it continues into. */
const docLines = (() => {
  const lines = cliDoc.split('\n');
  const i = lines.findIndex((l) => l.includes('leases acquire') && l.includes('-o env'));
  return lines.slice(i, i + 2).join('\n');
})();
const demo = demoInstructions({
  apiUrl: 'http://127.0.0.1:18300',
  target: '127.0.0.1:18320',
  fleetUrl: 'http://127.0.0.1:18300/fleet',
});
/** The printed block under `# lease …`, as the e2e demo test cuts it. */
const demoLines = (() => {
  const lines = demo.split('\n');
  const start = lines.findIndex((l) => l.startsWith('  # lease'));
  const end = lines.findIndex((l, i) => i > start && l.trim() === '');
  return lines
    .slice(start + 1, end)
    .map((l) => l.slice(2))
    .join('\n');
})();

describe.each([
  ['docs/cli.md', docLines],
  ['the lines npm start prints', demoLines],
])('%s: lease, then fetch through it', (_where, script) => {
  it.each([[[]], [['-e']], [['-euo', 'pipefail']]])(
    'a failed acquire fetches nothing (bash %j): not through the previous lease, not directly',
    async (flags) => {
      standIns(false);
      expect(script).toContain('leases acquire');
      expect(await sh(script, flags)).not.toContain('curl via');
    },
  );

  it('a lease that works is what the fetch goes through', async () => {
    standIns(true);
    expect(await sh(script, [])).toContain('curl via http://u:p@127.0.0.2:3128');
  });
});
