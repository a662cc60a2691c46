// startGateway told to stop during its start wait (SIGTERM before the first snapshot): it binds no
// listener, stops the source and the reporter as shutdown() would (in controller mode, the draining
// report), and answers null.
import { describe, expect, it } from 'vitest';
import { loadGatewayConfig } from './config.js';
import { startGateway } from './gateway.js';
import { jsonLogger } from './logger.js';
import type { Reporter, RuntimeView, SnapshotSink, SnapshotSource } from './session.js';

/** A source that never offers a snapshot: its start waits until `stopping` aborts (as the session's does). */
function waitingSource(events: string[]): SnapshotSource {
  return {
    start: (_sink: SnapshotSink, stopping?: AbortSignal) =>
      new Promise<void>((resolve) => {
        events.push('source start');
        stopping?.addEventListener('abort', () => resolve(), { once: true });
      }),
    stop: async () => {
      events.push('source stop');
    },
  };
}

function recordingReporter(events: string[], views: RuntimeView[]): Reporter {
  return {
    start: (view) => {
      views.push(view);
      events.push('reporter start');
    },
    stop: async () => {
      events.push(`reporter stop (counts ${JSON.stringify(views[0]?.runtimeCounts())})`);
    },
  };
}

describe('startGateway told to stop during the start wait', () => {
  it('binds no listener, stops the source then the reporter, and answers null', async () => {
    const cfg = loadGatewayConfig([], {
      GATEWAY_CLIENT_USERS: 'u:p',
      HOST: '127.0.0.1',
      PORT: '0',
      GATEWAY_PROXY_PORT: '0',
    });
    const events: string[] = [];
    const views: RuntimeView[] = [];
    const stopping = new AbortController();
    const started = startGateway(cfg, {
      log: jsonLogger('error', () => {}),
      version: 't',
      source: waitingSource(events),
      reporter: recordingReporter(events, views),
      stopping: stopping.signal,
    });
    await new Promise((r) => setTimeout(r, 20));
    // The reporter runs through the wait: its rounds keep the session alive (control/start-wait-heartbeat).
    expect(events).toEqual(['reporter start', 'source start']);
    stopping.abort();
    expect(await started).toBeNull();
    expect(events).toEqual(['reporter start', 'source start', 'source stop', 'reporter stop (counts [])']);
  });
});
