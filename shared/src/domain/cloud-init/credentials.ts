// The proxy credentials secret: what its payload holds and where a VM finds it. One format for every
// reader (the VM's startup script, the lease service, the gateway): `username:password`, UTF-8, with
// trailing newlines ignored (so `echo … | gcloud secrets versions add --data-file=-` works). Both parts stay
// inside what a proxy URL's userinfo and Basic auth carry without ambiguity.
export const CREDENTIALS_SECRET_METADATA_KEY = 'proxyplane-credentials-secret';

/** Usernames: URL-unreserved characters, so `http://user:…@host` needs no escaping of the user. */
export const USERNAME_PATTERN = /^[A-Za-z0-9._~-]{1,64}$/;
/** Passwords: printable ASCII without spaces (Basic auth has no agreed charset beyond ASCII). */
export const PASSWORD_PATTERN = /^[!-~]{1,256}$/;

export interface ProxyCredentials {
  username: string;
  password: string;
}

export type ParsedCredentials = { ok: true; credentials: ProxyCredentials } | { ok: false; reason: string };

/** Splits at the first ":"; the reason never quotes the payload. */
export function parseProxyCredentials(payload: string): ParsedCredentials {
  const text = payload.replace(/\n+$/, '');
  const colon = text.indexOf(':');
  if (colon < 0) return { ok: false, reason: 'the credentials secret must hold username:password' };
  const username = text.slice(0, colon);
  const password = text.slice(colon + 1);
  if (!USERNAME_PATTERN.test(username))
    return { ok: false, reason: 'the username must be 1-64 of [A-Za-z0-9._~-]' };
  if (!PASSWORD_PATTERN.test(password)) {
    // CRLF is refused, not trimmed: the VM's startup script strips only newlines, and every reader must
    // accept exactly what the VM accepts (a lease URL whose proxy refuses it helps nobody).
    const hint = password.endsWith('\r')
      ? ' (it ends in a carriage return: write the secret with LF line endings)'
      : '';
    return {
      ok: false,
      reason: `the password must be 1-256 printable ASCII characters without spaces${hint}`,
    };
  }
  return { ok: true, credentials: { username, password } };
}

/** `username:password` as Basic auth and the emulated VMs' proxies compare it (RFC 7617 §2). */
export const basicUserPass = (c: ProxyCredentials): string => `${c.username}:${c.password}`;
