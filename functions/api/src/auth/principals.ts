// Who is an admin, in the IAM member syntax ("user:ops@example.com",
// "serviceAccount:ci@p.iam.gserviceaccount.com", "domain:example.com", "group:…"), plus bare emails.
// An ID token proves an email and, for Google Workspace accounts, a hosted domain (the `hd` claim); it
// says nothing about group membership, so group entries cannot be honoured and are reported, not guessed.
import { AuthConfigError } from './authenticator.js';

export interface AdminPrincipals {
  /** Lower-cased emails (users and service accounts). */
  emails: string[];
  /** Lower-cased Workspace domains, matched against the token's `hd` claim, never the email suffix. */
  domains: string[];
  /** Entries that cannot be enforced from an ID token (groups), for a warning at start. */
  ignored: string[];
}

const EMAIL = /^[^@\s:,]+@[^@\s:,]+\.[^@\s:,]+$/;
const DOMAIN = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?\.)+[a-z]{2,63}$/;

export function parseAdminPrincipals(entries: string[], source: string): AdminPrincipals {
  const out: AdminPrincipals = { emails: [], domains: [], ignored: [] };
  for (const raw of entries) {
    const entry = raw.trim();
    const colon = entry.indexOf(':');
    const kind = colon < 0 ? 'email' : entry.slice(0, colon);
    const value = (colon < 0 ? entry : entry.slice(colon + 1)).toLowerCase();
    if (kind === 'email' || kind === 'user' || kind === 'serviceAccount') {
      if (!EMAIL.test(value)) throw new AuthConfigError(`${source}: "${entry}" is not an email address`);
      out.emails.push(value);
    } else if (kind === 'domain') {
      if (!DOMAIN.test(value)) throw new AuthConfigError(`${source}: "${entry}" is not a domain`);
      out.domains.push(value);
    } else if (kind === 'group') {
      out.ignored.push(entry);
    } else {
      throw new AuthConfigError(`${source}: "${entry}": expected user:, serviceAccount:, domain: or group:`);
    }
  }
  return out;
}
