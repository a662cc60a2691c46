import { describe, expect, it } from 'vitest';
import { defaultApiUrl, resolveApiUrl, resolveToken, type TokenSources } from './config.js';

const sources = (
  env: Record<string, string>,
  state: Record<string, string> | null = null,
  gcloud: string | null = null,
) => {
  const calls = { gcloud: 0 };
  const src: TokenSources = {
    env,
    localState: () => (state ? { env: state } : null),
    gcloudToken: () => {
      calls.gcloud++;
      return gcloud;
    },
  };
  return { src, calls };
};

const API = 'http://127.0.0.1:18300';

describe('resolveToken', () => {
  it.each([
    ['admin', { PROXYPLANE_TOKEN: 't', PROXYPLANE_ADMIN_TOKEN: 'a' }, 't', 'PROXYPLANE_TOKEN'],
    ['admin', { PROXYPLANE_ADMIN_TOKEN: 'a', PROXYPLANE_CRAWLER_TOKEN: 'c' }, 'a', 'PROXYPLANE_ADMIN_TOKEN'],
    [
      'crawler',
      { PROXYPLANE_ADMIN_TOKEN: 'a', PROXYPLANE_CRAWLER_TOKEN: 'c' },
      'c',
      'PROXYPLANE_CRAWLER_TOKEN',
    ],
    ['crawler', { PROXYPLANE_ADMIN_TOKEN: 'a' }, 'a', 'PROXYPLANE_ADMIN_TOKEN'],
  ] as const)('%s with %j uses %s', (role, env, token, source) => {
    const { src, calls } = sources(env, null, 'g');
    expect(resolveToken(role, API, src)).toEqual({ token, source });
    expect(calls.gcloud).toBe(0);
  });

  it("uses a running local plane's tokens only for that plane's URL", () => {
    const state = { PROXYPLANE_API_URL: API, PROXYPLANE_ADMIN_TOKEN: 'la', PROXYPLANE_CRAWLER_TOKEN: 'lc' };
    expect(resolveToken('crawler', API, sources({}, state).src).token).toBe('lc');
    expect(resolveToken('admin', API, sources({}, state).src).token).toBe('la');
    expect(resolveToken('admin', 'https://prod.example', sources({}, state, 'g').src)).toEqual({
      token: 'g',
      source: 'gcloud auth print-identity-token',
    });
  });

  it('falls back to no token (a local API with auth off needs none)', () => {
    expect(resolveToken('admin', API, sources({}).src)).toEqual({ token: null, source: 'none' });
  });
});

describe('resolveApiUrl', () => {
  it('takes the flag, then the env, then the local plane (with the port offset)', () => {
    expect(resolveApiUrl('http://x:1/', {})).toBe('http://x:1');
    expect(resolveApiUrl(undefined, { PROXYPLANE_API_URL: 'https://api.example/' })).toBe(
      'https://api.example',
    );
    expect(resolveApiUrl(undefined, {})).toBe('http://127.0.0.1:18300');
    expect(defaultApiUrl({ PROXYPLANE_PORT_OFFSET: '7000' })).toBe('http://127.0.0.1:25300');
  });
  it.each([['nope'], ['ftp://x']])('refuses %s', (v) => {
    expect(() => resolveApiUrl(v, {})).toThrow(TypeError);
  });
});
