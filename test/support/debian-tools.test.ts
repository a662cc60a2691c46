// The test setup's apt-get install of squid and friends starts no service: Debian's squid postinst
// started squid on 0.0.0.0:3128, and `npm start` after `npm test` then refused to start (audit of the
// local plane). The guard is a policy-rc.d answering 101 for the install's length.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { withServicesHeld } from './debian-tools.js';

describe('withServicesHeld', () => {
  it('refuses every service start while the install runs, and leaves nothing behind', async () => {
    const policy = join(mkdtempSync(join(tmpdir(), 'pp-policy-')), 'policy-rc.d');
    const during = await withServicesHeld(async () => {
      // What invoke-rc.d asks: the policy's exit status for the action (101: forbidden).
      const asked = spawnSync(policy, ['squid', 'start'], { encoding: 'utf8' });
      return { status: asked.status, executable: (statSync(policy).mode & 0o111) !== 0 };
    }, policy);
    expect(during).toEqual({ status: 101, executable: true });
    expect(existsSync(policy)).toBe(false);
  });

  it('removes it when the install fails too', async () => {
    const policy = join(mkdtempSync(join(tmpdir(), 'pp-policy-')), 'policy-rc.d');
    await expect(
      withServicesHeld(async () => {
        throw new Error('apt failed');
      }, policy),
    ).rejects.toThrow('apt failed');
    expect(existsSync(policy)).toBe(false);
  });

  it("leaves the machine's own policy as it is", async () => {
    const policy = join(mkdtempSync(join(tmpdir(), 'pp-policy-')), 'policy-rc.d');
    writeFileSync(policy, '#!/bin/sh\nexit 0\n', { mode: 0o755 });
    expect(await withServicesHeld(async () => 'installed', policy)).toBe('installed');
    expect(readFileSync(policy, 'utf8')).toBe('#!/bin/sh\nexit 0\n');
  });
});
