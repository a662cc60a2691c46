import { describe, expect, it } from 'vitest';
import { fleetPageUrl, formatReport } from './report.js';

describe('formatReport', () => {
  const text = formatReport({
    elapsedMs: 8_340,
    projectId: 'demo-p',
    portOffset: 0,
    endpoints: [
      { name: 'firestore', url: 'http://127.0.0.1:18180' },
      { name: 'function:reconcile', url: 'http://127.0.0.1:18201' },
    ],
    notBuilt: ['function probe (functions/probe/src/index.ts)'],
    env: { PUBSUB_EMULATOR_HOST: '127.0.0.1:18185' },
    logDir: '.local-plane/logs',
    fleetUrl: fleetPageUrl('http://127.0.0.1:18300', 'a/b'),
  });

  it('prints one aligned line per endpoint, with the elapsed start time', () => {
    expect(text).toContain('is up in 8.3s');
    expect(text).toContain('\n  firestore           http://127.0.0.1:18180\n');
    expect(text).toContain('\n  function:reconcile  http://127.0.0.1:18201\n');
  });

  // Printed with the endpoints, not only by the demo step: `npm start --no-demo` (or a demo that failed)
  // still tells the developer where the fleet page is.
  it('prints the fleet page with the admin token, encoded', () => {
    expect(text).toContain(
      '\nFleet page (admin; the link holds the admin token, do not share it): http://127.0.0.1:18300/fleet?token=a%2Fb\n',
    );
    expect(fleetPageUrl('http://127.0.0.1:18300', undefined)).toBe('http://127.0.0.1:18300/fleet');
  });

  it('lists what is not built yet and the exports', () => {
    expect(text).toContain('Not built yet:\n  function probe (functions/probe/src/index.ts)');
    expect(text).toContain('  export PUBSUB_EMULATOR_HOST=127.0.0.1:18185');
  });
});
