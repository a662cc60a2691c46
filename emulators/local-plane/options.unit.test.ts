import { describe, expect, it } from 'vitest';
import { repoRoot } from '../../shared/src/config/local-ports.js';
import { parsePlaneOptions } from './options.js';

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

  it.each([
    [['--no-demo'], {}, { demo: false }],
    [['--speed=4'], {}, { speed: 4 }],
    [['--speed', '0.5'], {}, { speed: 0.5 }],
    [['--speed=0.01'], {}, { speed: 0.01 }],
    [['--speed=100'], {}, { speed: 100 }],
    [[], { PROXYPLANE_PORT_OFFSET: '1000' }, { portOffset: 1000 }],
    [[], { PROXYPLANE_STATE_DIR: '/tmp/x' }, { stateDir: '/tmp/x' }],
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
    [['--speed=Infinity'], {}, /--speed must be a number from 0.01 to 100/],
    [['--speed=1e308'], {}, /--speed/],
    [['--speed=100.5'], {}, /--speed/],
    [['--speed=0.009'], {}, /--speed/],
    [['--speed=1e-300'], {}, /--speed/],
    [[], { PROXYPLANE_PORT_OFFSET: '-5' }, /PROXYPLANE_PORT_OFFSET/],
    [[], { PROXYPLANE_PORT_OFFSET: '50000' }, /65535/],
  ])('%j with %j is refused', (argv, env, message) => {
    expect(() => parsePlaneOptions(argv, env)).toThrow(message);
  });
});
