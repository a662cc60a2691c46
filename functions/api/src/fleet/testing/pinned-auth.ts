// The credentials and headers the fleet page's pinned-answer tests (api-answers, auth) share.
import type { Authenticator } from '../../auth/authenticator.js';
import { ADMIN_TOKEN } from '../../testing/harness.js';

/** The headers of an answer a client reads: what a pinned answer keeps beside its status and body. */
export const PINNED_HEADERS = [
  'content-type',
  'cache-control',
  'www-authenticate',
  'set-cookie',
  'retry-after',
];

/** An admin token, a valid credential that is not an admin's (403), one that cannot be checked (503). */
export const pinnedAuth: Authenticator = {
  description: 'test',
  authenticate: async (token) =>
    token === ADMIN_TOKEN
      ? { ok: true, principal: { kind: 'token', name: 'unit' } }
      : token === 'eyJ.not-an.admin'
        ? { ok: false, code: 'forbidden', reason: 'ops@example.com is not an admin' }
        : token === 'eyJ.certs.down'
          ? { ok: false, code: 'unavailable', reason: 'cannot fetch Google signing certificates' }
          : { ok: false, code: 'unauthenticated', reason: 'invalid credential' },
};
