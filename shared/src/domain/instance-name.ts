// The seed's NameFromUID: an instance's name is a pure function of the proxy's UID, so duplicate and
// concurrent creates for one proxy all name the same instance and the provider's "already exists" makes
// the second a no-op (brief invariant 1). A replacement reuses the name: it is created only after the old
// instance is gone (seed §3 replaceInstance polls until NotFound).

const PREFIX = 'pp-';
const HEX_DIGITS = 20;
const CANONICAL_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** `pp-` + the first 20 hex digits of the UID: 23 characters, an RFC 1035 label (GCE instance names). */
export function instanceNameFromUid(uid: string): string {
  const hex = uid.toLowerCase().replace(/-/g, '');
  if (!/^[0-9a-f]+$/.test(hex) || hex.length < HEX_DIGITS) {
    throw new RangeError(`not a UUID: ${JSON.stringify(uid)}`);
  }
  return PREFIX + hex.slice(0, HEX_DIGITS);
}

/**
 * The part of a UUID its instance name keeps: its first 20 hex digits are its first 23 characters
 * (8-4-4-4, dashes included). Every UUID that starts with it — in either case — names the same instance,
 * so a check that an instance is a live proxy's must match on this, never on the whole uid as a string.
 */
export function uidNamePrefixes(uid: string): string[] {
  if (!CANONICAL_UUID.test(uid))
    throw new RangeError(`not a UUID in 8-4-4-4-12 form: ${JSON.stringify(uid)}`);
  const prefix = uid.slice(0, 23);
  return [...new Set([prefix.toLowerCase(), prefix.toUpperCase()])];
}
