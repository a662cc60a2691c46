// A revive still binding when the proxy is killed or closed (an admin revive racing a guest stop or an
// instance delete) must end with nothing listening: the listener is tracked from creation, and a bind
// that completes after the shutdown closes itself.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { connect } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createForwardProxy } from '../../emulators/forward-proxy/proxy.js';
import { privateLoopbackRange } from './gc-support.js';

const accepts = (host: string, port: number) =>
  new Promise<boolean>((resolve) => {
    const s = connect(port, host);
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });

describe('revive racing a shutdown', () => {
  it.each(['close', 'kill'] as const)(
    'revive + %s together leave the port refusing connections',
    async (how) => {
      const p = createForwardProxy();
      const a = await p.listen();
      await p.kill();
      await Promise.all([p.revive(), how === 'close' ? p.close() : p.kill()]);
      expect(await accepts(a.host, a.port)).toBe(false);
      if (how === 'kill') expect(p.killed).toBe(true);
      await p.close();
    },
  );

  it('an emulated VM stopped while its proxy revives stays down, and the emulator process can exit', async () => {
    // In a child process: a listener left open would keep its event loop alive after emu.stop().
    const { first, last } = privateLoopbackRange();
    const script = `
      import { connect } from 'node:net';
      import { startComputeEmulator } from ${JSON.stringify(join(process.cwd(), 'emulators/compute/server.ts'))};
      const emu = await startComputeEmulator({ bootDelayMs: 20, deleteDelayMs: 20,
        addressRange: { first: ${JSON.stringify(first)}, last: ${JSON.stringify(last)} } });
      const zone = 'us-central1-a';
      const res = await fetch(emu.url + '/compute/v1/projects/demo/zones/' + zone + '/instances', {
        method: 'POST',
        body: JSON.stringify({ name: 'vm1', machineType: 'zones/' + zone + '/machineTypes/e2-small',
          disks: [{ boot: true, initializeParams: { sourceImage: 'projects/debian-cloud/global/images/family/debian-12' } }],
          networkInterfaces: [{ network: 'global/networks/default', accessConfigs: [{ name: 'External NAT', type: 'ONE_TO_ONE_NAT' }] }] }),
      });
      if (res.status !== 200) throw new Error('insert ' + res.status);
      let vm;
      for (let i = 0; i < 100; i++) {
        vm = emu.admin.instance('demo', zone, 'vm1');
        if (vm.status === 'RUNNING' && vm.proxy) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      const accepts = () => new Promise((r) => { const s = connect(vm.proxyPort, vm.address);
        s.once('connect', () => { s.destroy(); r(true); }); s.once('error', () => r(false)); });
      await emu.admin.killProxy('demo', zone, 'vm1');
      const reviving = emu.admin.reviveProxy('demo', zone, 'vm1');
      emu.admin.stopInstance('demo', zone, 'vm1');
      await reviving.catch(() => {});
      await new Promise((r) => setTimeout(r, 100));
      console.log('stopped vm accepts: ' + (await accepts()));
      await emu.stop();
      console.log('after emulator stop accepts: ' + (await accepts()));
    `;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d;
    });
    child.stderr.on('data', (d: Buffer) => {
      out += d;
    });
    const bound = setTimeout(() => child.kill('SIGKILL'), 20_000);
    const [code, signal] = await once(child, 'exit');
    clearTimeout(bound);
    expect(out).toContain('stopped vm accepts: false');
    expect(out).toContain('after emulator stop accepts: false');
    expect({ code, signal }).toEqual({ code: 0, signal: null }); // exited by itself: nothing left open
  }, 30_000);
});
