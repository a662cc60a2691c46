// The probe function against an external SOCKS5 proxy (emulators/forward-proxy, protocol 'socks5', a
// real process-local proxy) and the Firestore emulator: the whole path from the stored spec — the pass
// hands the prober the endpoint's protocol, BASIC and EGRESS run over SOCKS5 with the credentials the
// secret holds — to the verdict reconcile folds into status (docs/health.md § Tracks and verdicts,
// "SOCKS5 proxies").
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createForwardProxy, type ForwardProxy } from '../../emulators/forward-proxy/proxy.js';
import { ProxySpec } from '../../shared/src/domain/proxy.js';
import { testProjectId } from '../support/emulators.js';
import { type ProbeFleet, startProbeFleet } from '../support/probe-fleet.js';
import { provisionedProxy } from '../support/provisioned-proxy.js';

describe('probe function: an external SOCKS5 proxy', () => {
  let fleet: ProbeFleet;
  const socks: ForwardProxy[] = [];
  beforeAll(async () => {
    fleet = await startProbeFleet(testProjectId());
  });
  afterAll(async () => {
    await Promise.all(socks.map((p) => p.close()));
    await fleet?.stop();
  });

  /** A SOCKS5 proxy wanting `credentials` (the fleet's secrets all read "unused:unused"). */
  async function addSocks(name: string, credentials: string) {
    const proxy = createForwardProxy({ protocol: 'socks5', credentials });
    socks.push(proxy);
    const { host, port } = await proxy.listen();
    const spec = ProxySpec.parse({
      mode: 'external',
      endpoint: { host, port, protocol: 'socks5' },
      credentialsRef: { secret: 'socks-creds' },
      healthCheck: {
        url: fleet.target.url,
        intervalSeconds: 1,
        timeoutSeconds: 2,
        successThreshold: 2,
        failureThreshold: 2,
      },
    });
    await fleet.proxies.create(
      provisionedProxy({ name, uid: randomUUID(), spec, now: fleet.clock.now(), ip: host }),
    );
    return proxy;
  }

  const status = async (name: string) => (await fleet.proxies.get(name))!.proxy.status;
  const probes = (name: string) => fleet.log.lines.filter((l) => l.message === 'probe' && l.proxy === name);

  it('passes BASIC and EGRESS over SOCKS5 → Ready; killed → Unhealthy (DIAL econnrefused); revived → Ready', async () => {
    const proxy = await addSocks('socks-ok', 'unused:unused');
    await fleet.tick();
    await fleet.tick();
    expect((await fleet.health.get('socks-ok'))?.verdict).toBe('AVAILABLE');
    expect(await status('socks-ok')).toMatchObject({ phase: 'Ready' });
    expect(probes('socks-ok').map((l) => [l.tier, l.ok])).toEqual(
      expect.arrayContaining([
        ['BASIC', true],
        ['EGRESS', true],
      ]),
    );
    // Every BASIC and EGRESS probe was a SOCKS5 tunnel: nothing went through as an HTTP proxy request.
    expect(proxy.stats()).toMatchObject({ forwarded: 0, authFailures: 0 });
    expect(proxy.stats().tunnels).toBe(probes('socks-ok').length);

    await proxy.kill();
    await fleet.tick();
    await fleet.tick();
    expect((await fleet.health.get('socks-ok'))?.verdict).toBe('UNHEALTHY');
    expect(await status('socks-ok')).toMatchObject({ phase: 'Unhealthy' });
    expect(probes('socks-ok').at(-1)).toMatchObject({ tier: 'BASIC', ok: false, code: 'econnrefused' });

    await proxy.revive();
    await fleet.tick();
    await fleet.tick();
    expect(await status('socks-ok')).toMatchObject({ phase: 'Ready' });
  });

  it('credentials the proxy refuses: Unhealthy, each probe failing proxy_auth_required', async () => {
    const proxy = await addSocks('socks-auth', 'someone:else');
    await fleet.tick();
    await fleet.tick();
    expect((await fleet.health.get('socks-auth'))?.verdict).toBe('UNHEALTHY');
    expect(await status('socks-auth')).toMatchObject({ phase: 'Unhealthy' });
    const basic = probes('socks-auth').filter((l) => l.tier === 'BASIC');
    expect(basic.map((l) => l.code)).toEqual(['proxy_auth_required', 'proxy_auth_required']);
    expect(proxy.stats().authFailures).toBe(2);
  });
});
