// The proxy credentials secret: what its payload holds and where a VM finds it. One format for every
// reader (the VM's startup script, the lease service, the probe, the gateway): `username:password`, UTF-8,
// with trailing newlines ignored (so `echo … | gcloud secrets versions add --data-file=-` works). Both parts
// stay inside what a proxy URL's userinfo (percent-encoded) and Basic auth carry without ambiguity.
export const CREDENTIALS_SECRET_METADATA_KEY = 'proxyplane-credentials-secret';

/** A managed proxy's usernames: URL-unreserved characters, as its VM's startup script accepts them. */
export const USERNAME_PATTERN = /^[A-Za-z0-9._~-]{1,64}$/;
/**
 * An external proxy's usernames: what RFC 3986 lets a URL's userinfo hold, and `@` (a lease URL
 * percent-encodes it), up to RFC 1929's 255 bytes. No VM of ours reads them, and providers put targeting
 * options in the username — `customer-c1-zone-residential-country-us-session-12345`, `user+tag@example.com`
 * — often past 64. Quotes, braces and brackets stay out: a JSON secret (`{"username":…}`) is refused as
 * malformed, not read as the user `{"username"`.
 */
export const EXTERNAL_USERNAME_PATTERN = /^[A-Za-z0-9._~!$&'()*+,;=%@-]{1,255}$/;
/** Passwords: printable ASCII without spaces (Basic auth has no agreed charset beyond ASCII). */
export const PASSWORD_PATTERN = /^[!-~]{1,256}$/;

export interface ProxyCredentials {
  username: string;
  password: string;
}

export type ParsedCredentials = { ok: true; credentials: ProxyCredentials } | { ok: false; reason: string };

/**
 * Whose secret it is: a managed proxy's VM, booted by the default cloud-init, refuses what its startup
 * script cannot take, and every reader refuses it alike (a lease URL whose proxy refuses it helps nobody):
 * `managed`. An external proxy's provider chose its username, as did the script of a managed proxy with a
 * cloud-init of its own: `external`, 1–255 of what a URL's userinfo holds and `@` (credentialsRuleOf). A
 * reader that cannot tell (the gateway, by secret reference) reads the external rule: a managed proxy on
 * the default cloud-init whose secret only that allows never boots, so never reaches it.
 */
export type CredentialsRule = 'managed' | 'external';

/** The rule a proxy's credentials secret is read by: `managed` only where the default cloud-init reads it. */
export const credentialsRuleOf = (spec: {
  mode: 'managed' | 'external';
  cloudInit?: unknown;
}): CredentialsRule =>
  spec.mode === 'managed' && (spec.cloudInit === undefined || spec.cloudInit === null)
    ? 'managed'
    : 'external';

/** Splits at the first ":"; the reason never quotes the payload. */
export function parseProxyCredentials(payload: string, rule: CredentialsRule = 'managed'): ParsedCredentials {
  const text = payload.replace(/\n+$/, '');
  const colon = text.indexOf(':');
  if (colon < 0) return { ok: false, reason: 'the credentials secret must hold username:password' };
  const username = text.slice(0, colon);
  const password = text.slice(colon + 1);
  if (rule === 'managed' && !USERNAME_PATTERN.test(username))
    return { ok: false, reason: 'the username must be 1-64 of [A-Za-z0-9._~-]' };
  if (rule === 'external' && !EXTERNAL_USERNAME_PATTERN.test(username))
    return {
      ok: false,
      reason: "the username must be 1-255 of letters, digits and -._~!$&'()*+,;=%@",
    };
  if (!PASSWORD_PATTERN.test(password)) {
    // CRLF is refused, not trimmed: the VM's startup script strips only newlines, and every reader of a
    // managed proxy's secret must accept exactly what the VM accepts (a lease URL whose proxy refuses it
    // helps nobody); an external proxy's reader keeps the same password rule.
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
