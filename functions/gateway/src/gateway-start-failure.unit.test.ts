// startGateway failing after the worker registered (a listener's port taken): it stops the source and the
// reporter as shutdown() would — in controller mode the draining report, which hands the worker's proxies
// on — before the start-up error reaches main.ts (which exits). The reporter, started before the source
// (it runs through the start wait), is stopped too when the source's start fails.
import net, { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadGatewayConfig } from './config.js';
import { startGateway } from './gateway.js';
import { jsonLogger } from './logger.js';
import type { Reporter, RuntimeView, SnapshotSource } from './session.js';

/** A source whose start returns at once, as once registered and handed its first snapshot. */
function startedSource(events: string[]): SnapshotSource {
  return {
    start: async () => {
      events.push('source start');
    },
    stop: async () => {
      events.push('source stop');
    },
  };
}

function recordingReporter(events: string[]): Reporter {
  let view: RuntimeView | null = null;
  return {
    start: (v) => {
      view = v;
      events.push('reporter start');
    },
    stop: async () => {
      events.push(`reporter stop (counts ${JSON.stringify(view?.runtimeCounts())})`);
    },
  };
}

describe('startGateway whose listener cannot bind', () => {
  const taken = net.createServer();
  let port = 0;

  beforeAll(async () => {
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    port = (taken.address() as AddressInfo).port;
  });

  afterAll(() => new Promise((r) => taken.close(r)));

  it.each([
    ['the proxy listener', (p: number) => ({ GATEWAY_PROXY_PORT: String(p), PORT: '0' })],
    ['the HTTP listener', (p: number) => ({ GATEWAY_PROXY_PORT: '0', PORT: String(p) })],
  ])('%s: rejects, after stopping the source then the reporter', async (_, ports) => {
    const cfg = loadGatewayConfig([], {
      GATEWAY_CLIENT_USERS: 'u:p',
      HOST: '127.0.0.1',
      ...ports(port),
    });
    const events: string[] = [];
    const started = startGateway(cfg, {
      log: jsonLogger('error', () => {}),
      version: 't',
      source: startedSource(events),
      reporter: recordingReporter(events),
    });
    await expect(started).rejects.toMatchObject({ code: 'EADDRINUSE' });
    expect(events).toEqual(['reporter start', 'source start', 'source stop', 'reporter stop (counts [])']);
  });
});

describe('startGateway whose source fails to start', () => {
  it('a source whose start fails (the controller refused every protocol): the reporter is stopped, the error kept', async () => {
    const cfg = loadGatewayConfig([], { GATEWAY_CLIENT_USERS: 'u:p', HOST: '127.0.0.1', PORT: '0' });
    const events: string[] = [];
    const refused = new Error('the control plane refused protocol 1');
    const started = startGateway(cfg, {
      log: jsonLogger('error', () => {}),
      version: 't',
      source: {
        start: async () => {
          events.push('source start');
          throw refused;
        },
        stop: async () => {
          events.push('source stop');
        },
      },
      reporter: recordingReporter(events),
    });
    await expect(started).rejects.toBe(refused);
    expect(events).toEqual(['reporter start', 'source start', 'reporter stop (counts [])']);
  });
});
