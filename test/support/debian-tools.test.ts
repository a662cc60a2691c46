// The test setup's apt-get install of squid leaves no squid service running or enabled: Debian's squid
// postinst started it on 0.0.0.0:3128 and enabled it, and `npm start` after `npm test` then refused to
// start, after every reboot too (audit of the local plane).
import { describe, expect, it } from 'vitest';
import { servicesOff } from './debian-tools.js';

describe('servicesOff', () => {
  const recorded = (packages: string[]) => {
    const calls: string[] = [];
    servicesOff(packages, (cmd, args) => calls.push([cmd, ...args].join(' ')));
    return calls;
  };

  it('stops and disables the squid service an install of squid started, under systemd or sysvinit', () => {
    expect(recorded(['squid', 'jq'])).toEqual([
      'systemctl disable --now squid.service',
      'deb-systemd-helper disable squid.service',
      'update-rc.d squid disable',
      'invoke-rc.d squid stop',
    ]);
  });

  it('touches nothing when squid was not installed by it (a squid already there is the machine’s own)', () => {
    expect(recorded(['jq', 'curl'])).toEqual([]);
  });
});
