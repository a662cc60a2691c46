import { describe, expect, it } from 'vitest';
import { googleIdentityAuthenticator } from './google-identity.js';
import type { IdTokenVerification, IdTokenVerifier } from './id-token-verifier.js';

const JWT = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln';
const verifier = (result: IdTokenVerification): IdTokenVerifier & { seen: string[] } => {
  const seen: string[] = [];
  return {
    seen,
    verify: async (token) => {
      seen.push(token);
      return result;
    },
  };
};
const claims = (email: string | undefined, emailVerified = true) =>
  ({ ok: true, claims: { email, emailVerified, audience: 'aud', subject: '1' } }) as const;

describe('googleIdentityAuthenticator', () => {
  const allowedEmails = ['Ops@Example.com', 'ci@proj.iam.gserviceaccount.com'];

  it.each([
    [claims('ops@example.com'), { ok: true, principal: { kind: 'google', email: 'ops@example.com' } }],
    [claims('OPS@example.COM'), { ok: true, principal: { kind: 'google', email: 'ops@example.com' } }],
    [claims('ci@proj.iam.gserviceaccount.com'), { ok: true }],
    [claims('eve@example.com'), { ok: false, code: 'forbidden' }],
    [claims('ops@example.com', false), { ok: false, code: 'forbidden' }],
    [claims(undefined), { ok: false, code: 'forbidden' }],
    [{ ok: false, kind: 'invalid' } as const, { ok: false, code: 'unauthenticated' }],
    [{ ok: false, kind: 'unavailable' } as const, { ok: false, code: 'unavailable' }],
  ])('%j → %j', async (result, expected) => {
    const auth = googleIdentityAuthenticator({ verifier: verifier(result), allowedEmails });
    expect(await auth.authenticate(JWT)).toMatchObject(expected);
  });

  it('never hands something that is not a JWT to the verifier', async () => {
    const v = verifier(claims('ops@example.com'));
    const auth = googleIdentityAuthenticator({ verifier: v, allowedEmails });
    for (const token of [undefined, 'opaque-static-token', 'a.b', 'a.b.c.d', 'a.b.c=']) {
      expect(await auth.authenticate(token)).toMatchObject({ ok: false, code: 'unauthenticated' });
    }
    expect(v.seen).toEqual([]);
    expect(auth.recognises(JWT)).toBe(true);
    expect(auth.recognises('opaque-static-token')).toBe(false);
  });
});
