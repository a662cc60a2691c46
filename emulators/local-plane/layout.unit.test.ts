import { describe, expect, it } from 'vitest';
import { loadLocalPorts } from '../../shared/src/config/local-ports.js';
import { planeLayout } from './layout.js';

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
