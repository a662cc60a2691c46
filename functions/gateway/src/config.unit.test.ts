import { describe, expect, it } from 'vitest';
import { ConfigError, loadGatewayConfig, maxPreAuthPerSource } from './config.js';
import { DEFAULT_SESSION_SETTINGS } from './control/session-settings.js';

describe('loadGatewayConfig', () => {
  it('reads the snapshot from --snapshot before the env, and users in both notations', () => {
    const a = loadGatewayConfig(['--snapshot', 'a.json'], {
      GATEWAY_SNAPSHOT_FILE: 'b.json',
      GATEWAY_CLIENT_USERS: 'u1:p:1,u2:p2',
    });
    expect(a.snapshotFile).toBe('a.json');
    expect(a.GATEWAY_CLIENT_USERS).toEqual([
      { username: 'u1', password: 'p:1' },
      { username: 'u2', password: 'p2' },
    ]);
    const b = loadGatewayConfig([], {
      GATEWAY_CLIENT_USERS: '[{"username":"x","password":"y,z"}]',
      GATEWAY_PROXY_PORT: 'off',
    });
    expect(b.GATEWAY_CLIENT_USERS).toEqual([{ username: 'x', password: 'y,z' }]);
    expect(b.GATEWAY_PROXY_PORT).toBe('off');
    expect(b.PORT).toBe(8080);
    expect(b.GATEWAY_PLAIN_HTTP).toBe('auto');
    expect(b.GATEWAY_GC_MARKING).toBe('atomic');
    expect(b.GATEWAY_DNS_SERVERS).toEqual([]);
    expect(b.GATEWAY_TRAFFIC_LOG_SECONDS).toBe(30);
    expect(
      loadGatewayConfig([], {
        GATEWAY_CLIENT_USERS: 'u:p',
        GATEWAY_DNS_SERVERS: '10.0.0.2, 127.0.0.1:5353,[fd00::53]:53,::1',
      }).GATEWAY_DNS_SERVERS,
    ).toEqual(['10.0.0.2', '127.0.0.1:5353', '[fd00::53]:53', '::1']);
    expect(
      loadGatewayConfig([], { GATEWAY_CLIENT_USERS: 'u:p', GATEWAY_GC_MARKING: 'incremental' })
        .GATEWAY_GC_MARKING,
    ).toBe('incremental');
    expect(
      loadGatewayConfig([], { GATEWAY_CLIENT_USERS: 'u:p', GATEWAY_PLAIN_HTTP: 'pinned' }).GATEWAY_PLAIN_HTTP,
    ).toBe('pinned');
  });

  it('reads user:password pairs one per line too (a secret written from a file)', () => {
    const c = loadGatewayConfig([], { GATEWAY_CLIENT_USERS: 'crawler:pa ss\r\nci:x\n' });
    expect(c.GATEWAY_CLIENT_USERS).toEqual([
      { username: 'crawler', password: 'pa ss' },
      { username: 'ci', password: 'x' },
    ]);
  });

  it.each([
    ['no client credentials at all', {}],
    ['a user without a password separator', { GATEWAY_CLIENT_USERS: 'nocolon' }],
    ['a user with an empty password', { GATEWAY_CLIENT_USERS: 'crawler:' }],
    ['an empty password among others', { GATEWAY_CLIENT_USERS: 'u:p,crawler:' }],
    ['a JSON user name with a colon', { GATEWAY_CLIENT_USERS: '[{"username":"a:b","password":"c"}]' }],
    ['a bad port', { GATEWAY_CLIENT_USERS: 'u:p', GATEWAY_PROXY_PORT: '70000' }],
    // The traffic alerts read 5-minute windows: a line at least every minute, and never a 0 ms timer.
    ['no traffic line', { GATEWAY_CLIENT_USERS: 'u:p', GATEWAY_TRAFFIC_LOG_SECONDS: '0' }],
    ['a traffic line too rare', { GATEWAY_CLIENT_USERS: 'u:p', GATEWAY_TRAFFIC_LOG_SECONDS: '61' }],
    ['an unknown auth mode', { GATEWAY_CLIENT_USERS: 'u:p', GATEWAY_CLIENT_AUTH: 'maybe' }],
    ['an unknown plain-HTTP mode', { GATEWAY_CLIENT_USERS: 'u:p', GATEWAY_PLAIN_HTTP: 'absolute' }],
    ['an unknown GC marking mode', { GATEWAY_CLIENT_USERS: 'u:p', GATEWAY_GC_MARKING: 'concurrent' }],
    ['a nameserver by name', { GATEWAY_CLIENT_USERS: 'u:p', GATEWAY_DNS_SERVERS: 'dns.google' }],
    [
      'a nameserver with a port but not ipv4:port or [ipv6]:port',
      { GATEWAY_CLIENT_USERS: 'u:p', GATEWAY_DNS_SERVERS: 'fd00::53]:53' },
    ],
    ['a nameserver port out of range', { GATEWAY_CLIENT_USERS: 'u:p', GATEWAY_DNS_SERVERS: '8.8.8.8:0' }],
    [
      'a control plane and a snapshot file at once',
      {
        GATEWAY_CLIENT_USERS: 'u:p',
        CONTROL_PLANE_URL: 'http://127.0.0.1:1',
        GATEWAY_SNAPSHOT_FILE: 's.json',
        GOOGLE_CLOUD_PROJECT: 'p',
      },
    ],
    ['a control plane without a project', { GATEWAY_CLIENT_USERS: 'u:p', CONTROL_PLANE_URL: 'http://x' }],
    [
      'a control plane URL that is not http(s)',
      { GATEWAY_CLIENT_USERS: 'u:p', CONTROL_PLANE_URL: 'ftp://x' },
    ],
    [
      'a control plane URL with credentials in it',
      { GATEWAY_CLIENT_USERS: 'u:p', CONTROL_PLANE_URL: 'https://u:SECRETPW@x', GOOGLE_CLOUD_PROJECT: 'p' },
    ],
    ['a worker id that is not one', { GATEWAY_CLIENT_USERS: 'u:p', GATEWAY_WORKER_ID: 'gw 1' }],
    ['a short worker token', { GATEWAY_CLIENT_USERS: 'u:p', GATEWAY_WORKER_TOKEN: 'short' }],
    [
      'a worker token with a line break',
      { GATEWAY_CLIENT_USERS: 'u:p', GATEWAY_WORKER_TOKEN: 'worker-token-SECRET\nsecond-line' },
    ],
  ])('refuses %s', (_label, env) => {
    expect(() => loadGatewayConfig([], env)).toThrow(ConfigError);
    expect(() => loadGatewayConfig([], env)).not.toThrow(/SECRET/);
  });

  it('takes a worker token without the line end a file left on it', () => {
    const c = loadGatewayConfig([], {
      GATEWAY_CLIENT_USERS: 'u:p',
      GATEWAY_WORKER_TOKEN: 'worker-token-0123456789\r\n',
    });
    expect(c.GATEWAY_WORKER_TOKEN).toBe('worker-token-0123456789');
  });

  it('refuses client users that are broken JSON without quoting them', () => {
    const env = { GATEWAY_CLIENT_USERS: '[{"username":"u","password":"SECRETPW"}, oops]' };
    let err: unknown;
    try {
      loadGatewayConfig([], env);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toContain('GATEWAY_CLIENT_USERS');
    expect((err as Error).message).not.toContain('CRETPW');
  });

  it('never echoes a refused worker token', () => {
    const env = { GATEWAY_CLIENT_USERS: 'u:p', GATEWAY_WORKER_TOKEN: 'worker-token-SECRET\nsecond-line' };
    const err = (() => {
      try {
        loadGatewayConfig([], env);
      } catch (e) {
        return e as Error;
      }
    })();
    expect(err).toBeInstanceOf(ConfigError);
    expect(err?.message).toContain('GATEWAY_WORKER_TOKEN');
    expect(err?.message).not.toContain('SECRET');
  });

  // Cloud Run sends SIGKILL 10 s after SIGTERM. Shutdown is the drain (alongside it, the wait for a
  // register call in flight), then the final draining report, then the wait for the Pub/Sub pull to close:
  // all bounded, by default well inside those 10 s, or the report saying nothing is in flight (which
  // hands the worker's proxies over at once) is cut off.
  it("the default shutdown budget fits in Cloud Run's 10 s SIGTERM grace, with half a second to spare", () => {
    const cfg = loadGatewayConfig([], { GATEWAY_CLIENT_USERS: 'u:p' });
    const { finalReportTimeoutMs, pullCloseTimeoutMs, shutdownRegisterWaitMs } = DEFAULT_SESSION_SETTINGS;
    const drainOrRegistration = Math.max(cfg.GATEWAY_DRAIN_TIMEOUT_MS, shutdownRegisterWaitMs);
    expect(drainOrRegistration + finalReportTimeoutMs + pullCloseTimeoutMs).toBeLessThanOrEqual(9_500);
  });

  it('reads controller mode', () => {
    const c = loadGatewayConfig([], {
      GATEWAY_CLIENT_USERS: 'u:p',
      CONTROL_PLANE_URL: 'https://api.example.run.app',
      GOOGLE_CLOUD_PROJECT: 'demo',
      GATEWAY_WORKER_ID: 'gw-1',
      GATEWAY_WORKER_TOKEN: 'worker-token-0123456789',
    });
    expect(c).toMatchObject({
      CONTROL_PLANE_URL: 'https://api.example.run.app',
      GATEWAY_WORKER_ID: 'gw-1',
      GATEWAY_WORKER_AUTH: 'google',
      GATEWAY_SNAPSHOT_AGE_LOG_SECONDS: 30,
      snapshotFile: undefined,
    });
  });

  it('allows no credentials only when auth is explicitly off', () => {
    expect(loadGatewayConfig([], { GATEWAY_CLIENT_AUTH: 'none' }).GATEWAY_CLIENT_AUTH).toBe('none');
  });

  it.each([
    'GATEWAY_CONTROL_TIMEOUT_MS',
    'GATEWAY_HEADER_TIMEOUT_MS',
    'GATEWAY_UPSTREAM_TIMEOUT_MS',
    'GATEWAY_IDLE_TIMEOUT_MS',
    'GATEWAY_LINGER_MS',
    'GATEWAY_DRAIN_TIMEOUT_MS',
    'GATEWAY_FETCH_TIMEOUT_MS',
  ])('%s past what a Node timer holds (it would fire after 1 ms) is refused', (name) => {
    const env = { GATEWAY_CLIENT_USERS: 'u:p' };
    expect(loadGatewayConfig([], { ...env, [name]: String(2 ** 31 - 1) })[name as 'PORT']).toBe(2 ** 31 - 1);
    expect(() => loadGatewayConfig([], { ...env, [name]: String(2 ** 31) })).toThrow(ConfigError);
  });

  it('GATEWAY_SNAPSHOT_AGE_LOG_SECONDS past what a Node timer holds is refused', () => {
    const env = { GATEWAY_CLIENT_USERS: 'u:p' };
    expect(() => loadGatewayConfig([], { ...env, GATEWAY_SNAPSHOT_AGE_LOG_SECONDS: '2147484' })).toThrow(
      ConfigError,
    );
    expect(
      loadGatewayConfig([], { ...env, GATEWAY_SNAPSHOT_AGE_LOG_SECONDS: '2147483' })
        .GATEWAY_SNAPSHOT_AGE_LOG_SECONDS,
    ).toBe(2147483);
  });

  it('GATEWAY_MAX_PREAUTH_PER_SOURCE: a tenth of GATEWAY_MAX_CONNECTIONS unless set, at least 1', () => {
    const env = { GATEWAY_CLIENT_USERS: 'u:p' };
    expect(maxPreAuthPerSource(loadGatewayConfig([], env))).toBe(2_000);
    expect(maxPreAuthPerSource(loadGatewayConfig([], { ...env, GATEWAY_MAX_CONNECTIONS: '5' }))).toBe(1);
    expect(maxPreAuthPerSource(loadGatewayConfig([], { ...env, GATEWAY_MAX_PREAUTH_PER_SOURCE: '50' }))).toBe(
      50,
    );
    for (const bad of ['0', '', 'many'])
      expect(() => loadGatewayConfig([], { ...env, GATEWAY_MAX_PREAUTH_PER_SOURCE: bad })).toThrow(
        ConfigError,
      );
  });
});
