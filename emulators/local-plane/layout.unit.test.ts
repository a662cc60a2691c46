import { describe, expect, it } from 'vitest';
import { loadLocalPorts } from '../../shared/src/config/local-ports.js';
import { adviceOffset, planeLayout } from './layout.js';

const fn = (source: string) => ({
  source,
  target: 't',
  topic: 'x',
  retry: true,
  timeoutSeconds: 60,
  memory: '256Mi',
});

describe('planeLayout', () => {
  const ports = loadLocalPorts();

  it('claims the ports of what will run, shifted by the offset, each with its firebase.json key', () => {
    const layout = planeLayout(100, {
      ports,
      functions: { functions: { api: fn('functions/api'), nope: fn('functions/nope') } },
    });
    expect(layout.claims.map((c) => [c.key, c.port])).toEqual([
      ['emulators.firestore.port', ports.firestore.port + 100],
      ['emulators.pubsub.port', ports.pubsub.port + 100],
      ['emulators.compute.port', ports.compute.port + 100],
      ['emulators.secretmanager.port', ports.secretmanager.port + 100],
      ['emulators.scheduler.port', ports.scheduler.port + 100],
      ['emulators.api.port', ports.api.port + 100],
      ['emulators.gateway.proxyPort', ports.gateway.proxyPort + 100],
      ['emulators.gateway.httpPort', ports.gateway.httpPort + 100],
    ]);
    // The gateway worker always runs: a port of it taken must fail up front with its key, not as "gateway
    // exited before it was ready" once everything else has started. (The demo site's ports are not
    // claimed: a demo that cannot bind says so and the plane keeps running.)
    expect(layout.claims.every((c) => c.host === '127.0.0.1')).toBe(true);
    // functions/api has src/main.ts, not src/index.ts: it is no functions-framework function.
    expect(layout.inventory.missing.map((m) => m.name)).toEqual(['api', 'nope']);
  });

  it('fails clearly when a built function has no port in firebase.json', () => {
    expect(() =>
      planeLayout(0, { ports, functions: { functions: { odd: fn('test/fixtures/functions/recorder') } } }),
    ).toThrow('firebase.json has no emulators.functions.ports.odd');
  });
});

describe('adviceOffset: the offset advised beside a running plane', () => {
  const ports = (o: number) => new Set(planeLayout(o).claims.map((c) => `${c.host}:${c.port}`));
  const clash = (a: number, b: number) => [...ports(a)].some((p) => ports(b).has(p));

  it('this start’s own offset when its ports are clear of the running plane’s and its dir is another', () => {
    expect(adviceOffset(5000, 0, '.local-plane')).toBe(5000);
  });

  it.each([
    ['none of its own', 0, 0, '.local-plane'],
    ['ports shared with the running plane (10 beside 0)', 10, 0, '.local-plane'],
    ['the running plane’s own', 1000, 1000, '.local-plane'],
    ['the dir just refused', 1000, 0, '.local-plane/1000'],
  ])('another when its own is %s', (_, own, running, refused) => {
    const o = adviceOffset(own, running, refused);
    expect(o).not.toBe(0);
    expect(o).not.toBe(own);
    expect(clash(o, running)).toBe(false);
    expect(`.local-plane/${o}`).not.toBe(refused);
  });

  it('the offsets 10 and 0 do share ports (what the advice must steer clear of)', () => {
    expect(clash(10, 0)).toBe(true);
  });
});
