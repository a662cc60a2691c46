import { describe, expect, it } from 'vitest';
import type { IdTokenVerifier } from '../auth/id-token-verifier.js';
import { workerAuthenticator } from './auth.js';
import {
  globMatches,
  loadWorkersApiConfig,
  parseServiceAccounts,
  parseWorkerTokens,
  workerAuthOffWarning,
} from './config.js';

const TOKEN = 'worker-token-gw-1-0123456789';
const verifier = (
  email: string | undefined,
  emailVerified = true,
  kind?: 'invalid' | 'unavailable',
): IdTokenVerifier => ({
  verify: async () =>
    kind ? { ok: false, kind } : { ok: true, claims: { email, emailVerified, audience: 'a', subject: 's' } },
});
const JWT = 'aaa.bbb.ccc';

describe('workerAuthenticator (contract §8: the worker id must be one the identity is authorised for)', () => {
  const base = {
    tokens: [{ workerId: 'gw-1', token: TOKEN }],
    serviceAccounts: [
      { email: 'gw@p.iam.gserviceaccount.com', pattern: 'gw-eu-*' },
      { email: 'any@p.iam.gserviceaccount.com', pattern: '*' },
    ],
    open: false,
  };
  it.each<[string, string | undefined, IdTokenVerifier, string, boolean | string]>([
    ['a worker token, its own id', TOKEN, verifier(undefined), 'gw-1', true],
    ['a worker token, another id', TOKEN, verifier(undefined), 'gw-2', false],
    ['no credential', undefined, verifier(undefined), 'gw-1', 'unauthenticated'],
    ['an unknown opaque token', 'nope-nope-nope-nope-nope', verifier(undefined), 'gw-1', 'unauthenticated'],
    ['a service account, id in its glob', JWT, verifier('gw@p.iam.gserviceaccount.com'), 'gw-eu-3', true],
    [
      'a service account, id outside its glob',
      JWT,
      verifier('gw@p.iam.gserviceaccount.com'),
      'gw-us-3',
      false,
    ],
    ['a service account for any id', JWT, verifier('ANY@p.iam.gserviceaccount.com'), 'whatever', true],
    ['a Google identity that is not a gateway', JWT, verifier('alice@example.com'), 'gw-1', 'forbidden'],
    ['an unverified email', JWT, verifier('gw@p.iam.gserviceaccount.com', false), 'gw-eu-1', 'forbidden'],
    ['a bad signature', JWT, verifier(undefined, true, 'invalid'), 'gw-1', 'unauthenticated'],
    ['Google certs unreachable', JWT, verifier(undefined, true, 'unavailable'), 'gw-1', 'unavailable'],
  ])('%s', async (_n, bearer, v, workerId, expected) => {
    const out = await workerAuthenticator({ ...base, verifier: v }).authenticate(bearer);
    if (typeof expected === 'string') expect(out).toMatchObject({ ok: false, code: expected });
    else expect(out.ok && out.principal.may(workerId)).toBe(expected);
  });
  it('open (local mode): anyone may act as any worker', async () => {
    const out = await workerAuthenticator({ ...base, verifier: null, open: true }).authenticate(undefined);
    expect(out.ok && out.principal.may('x')).toBe(true);
  });
  it('labels principals without the credential', async () => {
    const out = await workerAuthenticator({ ...base, verifier: null }).authenticate(TOKEN);
    expect(out.ok && out.principal.label).toBe('token:gw-1');
  });
});

describe('worker identity config', () => {
  it.each<[string, string, boolean]>([
    ['gw-eu-*', 'gw-eu-1', true],
    ['gw-eu-*', 'gw-us-1', false],
    ['gw.1', 'gwx1', false],
    ['*', 'anything', true],
  ])('glob %s vs %s → %s', (p, id, ok) => expect(globMatches(p, id)).toBe(ok));

  it.each<[string, string]>([
    ['no colon', 'gw-1'],
    ['a bad worker id', '-x:0123456789abcdef'],
    ['a short token', 'gw-1:short'],
    ['one token for two workers', 'a:0123456789abcdef,b:0123456789abcdef'],
  ])('WORKER_TOKENS refuses %s', (_n, v) => expect(() => parseWorkerTokens(v)).toThrow());

  it('GATEWAY_SERVICE_ACCOUNT: email, email=glob; needs an audience', () => {
    expect(parseServiceAccounts('a@b.c, d@e.f=gw-*')).toEqual([
      { email: 'a@b.c', pattern: '*' },
      { email: 'd@e.f', pattern: 'gw-*' },
    ]);
    expect(() => parseServiceAccounts('not-an-email')).toThrow();
    expect(() => loadWorkersApiConfig({ GATEWAY_SERVICE_ACCOUNT: 'a@b.c' })).toThrow(/AUDIENCES/);
    expect(
      loadWorkersApiConfig({ GATEWAY_SERVICE_ACCOUNT: 'a@b.c', ADMIN_AUDIENCES: 'https://api' }).audiences,
    ).toEqual(['https://api']);
  });

  it.each<[Record<string, string>, boolean]>([
    [{ PROXYPLANE_LOCAL: '1' }, true],
    [{ FIRESTORE_EMULATOR_HOST: '127.0.0.1:8080' }, true],
    [{}, false],
    [{ PROXYPLANE_LOCAL: '1', WORKER_TOKENS: `gw-1:${TOKEN}` }, false],
  ])('open only in explicit local mode with nothing configured: %j → %s', (env, open) =>
    expect(loadWorkersApiConfig(env).open).toBe(open),
  );

  it.each<[Record<string, string>, string | null]>([
    [{ PROXYPLANE_LOCAL: '1' }, '(PROXYPLANE_LOCAL=1 and no WORKER_TOKENS'],
    [{ FIRESTORE_EMULATOR_HOST: '127.0.0.1:8080' }, '(FIRESTORE_EMULATOR_HOST set and no WORKER_TOKENS'],
    [
      { PROXYPLANE_LOCAL: '1', FIRESTORE_EMULATOR_HOST: '127.0.0.1:8080' },
      '(PROXYPLANE_LOCAL=1 and FIRESTORE_EMULATOR_HOST set and no WORKER_TOKENS',
    ],
    [{ FIRESTORE_EMULATOR_HOST: '127.0.0.1:8080', WORKER_TOKENS: `gw-1:${TOKEN}` }, null],
    [{}, null],
  ])('the worker-auth-off warning names what made it local mode: %j', (env, part) => {
    const warning = workerAuthOffWarning(loadWorkersApiConfig(env));
    if (part === null) expect(warning).toBeNull();
    else expect(warning).toContain(part);
  });

  it('refuses timings that break the contract’s safety relations', () => {
    expect(() =>
      loadWorkersApiConfig({ OWNERSHIP_GRANT_SECONDS: '60', OWNERSHIP_RENEW_BEFORE_SECONDS: '60' }),
    ).toThrow();
    expect(() => loadWorkersApiConfig({ ALLOCATION_SAFETY_MARGIN_SECONDS: '200' })).toThrow();
    expect(() => loadWorkersApiConfig({ WORKER_REPORT_INTERVAL_SECONDS: '20' })).toThrow();
  });
});
