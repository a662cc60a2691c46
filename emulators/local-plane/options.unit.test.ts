import { describe, expect, it } from 'vitest';
import { repoRoot } from '../../shared/src/config/local-ports.js';
import { loadFunctionTable, loadPubSubTable, loadScheduleTable } from '../../shared/src/config/topology.js';
import { DEFAULT_WORKER_SETTINGS } from '../../shared/src/domain/workers/settings.js';
import { MIN_SPEED, parsePlaneOptions } from './options.js';

describe('parsePlaneOptions', () => {
  it('defaults: demo on, speed 1, no offset, .local-plane in the repo, demo project', () => {
    expect(parsePlaneOptions([], {})).toEqual({
      projectId: 'demo-proxyplane',
      portOffset: 0,
      demo: true,
      speed: 1,
      stateDir: `${repoRoot}.local-plane`,
      help: false,
    });
  });

  it.each(['.', './', repoRoot])('refuses the checkout itself as PROXYPLANE_STATE_DIR (%s)', (dir) => {
    expect(() => parsePlaneOptions([], { PROXYPLANE_STATE_DIR: dir })).toThrow(
      /must not be the checkout itself/,
    );
  });

  it.each([
    [['--no-demo'], {}, { demo: false }],
    [['--speed=4'], {}, { speed: 4 }],
    [['--speed', '0.5'], {}, { speed: 0.5 }],
    [['--speed=0.05'], {}, { speed: 0.05 }],
    [['--speed=100'], {}, { speed: 100 }],
    [[], { PROXYPLANE_PORT_OFFSET: '1000' }, { portOffset: 1000 }],
    [[], { PROXYPLANE_STATE_DIR: '/tmp/x' }, { stateDir: '/tmp/x' }],
    // Empty is unset: '' was the checkout itself (logs/ deleted at each start, tokens written into it).
    [[], { PROXYPLANE_STATE_DIR: '' }, { stateDir: `${repoRoot}.local-plane` }],
    [[], { GOOGLE_CLOUD_PROJECT: 'demo-other' }, { projectId: 'demo-other' }],
    [['-h'], {}, { help: true }],
  ])('%j with %j → %j', (argv, env, expected) => {
    expect(parsePlaneOptions(argv, env)).toMatchObject(expected);
  });

  it.each([
    [['--bogus'], {}, /bogus/],
    [['positional'], {}, /positional/],
    [['--speed=0'], {}, /--speed/],
    [['--speed=fast'], {}, /--speed/],
    // Periods of 0 (or past setTimeout's range, cut to 1 ms): ticks published non-stop.
    [['--speed=Infinity'], {}, /--speed must be a number from 0.05 to 100, got/],
    [['--speed=1e308'], {}, /--speed/],
    [['--speed=100.5'], {}, /--speed/],
    // The snapshot tick every 500 s: the local gateway's 180 s grant lapsed between ticks.
    [
      ['--speed=0.01'],
      {},
      /--speed must be a number from 0.05 to 100: slower, the gateway's ownership grant lapses/,
    ],
    [['--speed=0.049'], {}, /--speed/],
    [['--speed=1e-300'], {}, /--speed/],
    [[], { PROXYPLANE_PORT_OFFSET: '-5' }, /PROXYPLANE_PORT_OFFSET/],
    [[], { PROXYPLANE_PORT_OFFSET: '50000' }, /65535/],
  ])('%j with %j is refused', (argv, env, message) => {
    expect(() => parsePlaneOptions(argv, env)).toThrow(message);
  });
});

describe('the slowest --speed keeps the local plane working', () => {
  const period = (job: string) => loadScheduleTable().jobs[job]!.localEverySeconds / MIN_SPEED;
  const w = DEFAULT_WORKER_SETTINGS;
  it.each([
    // Only the tick renews a grant: the next one must come before the gateway stops using its proxies.
    [
      'snapshot-tick comes before the grant is unusable',
      period('snapshot-tick'),
      (w.grantMs - w.allocationSafetyMarginMs - w.skewMs) / 1000,
    ],
    // A sweep runs for one period.
    [
      'a requeue sweep ends within its timeout',
      period('requeue-sweep'),
      loadFunctionTable().functions.requeue!.timeoutSeconds,
    ],
    [
      'a requeue sweep ends within its ack deadline',
      period('requeue-sweep'),
      loadPubSubTable().topics['ticks-requeue']!.ackDeadlineSeconds!,
    ],
  ])('%s (%s s < %s s)', (_what, seconds, limit) => {
    expect(seconds).toBeLessThan(limit);
  });
});
