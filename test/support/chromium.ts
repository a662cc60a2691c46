// Debian's Chromium for the tests that drive a real browser (playwright-core, no bundled browser).
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

export const CHROMIUM = '/usr/bin/chromium';

/** Installs Debian's chromium when it is missing; false only when apt itself is not there. */
export function ensureChromium(): boolean {
  if (existsSync(CHROMIUM)) return true;
  if (!existsSync('/usr/bin/apt-get')) return false;
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  execFileSync('apt-get', ['update'], { stdio: 'ignore', env, timeout: 300_000 });
  execFileSync('apt-get', ['install', '-y', '--no-install-recommends', 'chromium'], {
    stdio: 'ignore',
    env,
    timeout: 600_000,
  });
  return existsSync(CHROMIUM);
}
