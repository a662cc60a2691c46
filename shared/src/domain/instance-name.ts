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
 * Whether `providerId`'s last segment (the instance's name) is the name `uid` gives its instance: the
 * proof, beside the labels, that the plane created it — labels are copied by "create similar" and machine
 * images, and anyone can set them. False for a uid not in UUID form (it names no instance).
 */
export function isInstanceNamedFor(providerId: string, uid: string): boolean {
  let name: string;
  try {
    name = instanceNameFromUid(uid);
  } catch {
    return false;
  }
  return providerId.slice(providerId.lastIndexOf('/') + 1) === name;
}

/** The characters of a UUID its instance name keeps: its first 20 hex digits (8-4-4-4, dashes included). */
const NAME_CHARS = 23;

/** A UUID's name characters (8-4-4-4 hex digits), at the start of a string, whatever follows them. */
const NAME_PART = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}/i;

/**
 * The one canonical form of a uid for "does it name the same instance", which every such comparison goes
 * through (the orphan GC's live set, ProxyStore.holdsUid in every store): a UUID's first 20 hex digits,
 * dashes kept, lower case — every string that starts with them, in any mix of cases, names the same
 * instance; any other string lower-cased whole. Comparing raw strings, a uid stored in capitals or in
 * mixed case (a console edit) did not hold the instance named after it. Whatever follows the name
 * characters is not read, so a stored uid a console edit cut short or lengthened (a document that no
 * longer fits the model) still holds its instance, as the prefix lookups always found it.
 */
export function uidKey(uid: string): string {
  return (NAME_PART.test(uid) ? uid.slice(0, NAME_CHARS) : uid).toLowerCase();
}

/** At most 2^3 = 8 prefixes: the hex letters whose case a lookup spells both ways. */
const MAX_CASED_LETTERS = 3;

/**
 * Prefixes a store can match raw, case-sensitive uid strings against (a Firestore range query) so that
 * every uid with this uid's uidKey starts with one of them, in whatever mix of cases it is stored: each
 * spelling of the longest leading part of the uid's name characters that holds at most three hex letters
 * (digits and dashes have no case). The part may be shorter than the name characters, so a store confirms
 * each uid it finds with uidKey. Throws a RangeError for a string not in UUID form (it names no instance).
 */
export function uidKeyPrefixes(uid: string): string[] {
  if (!CANONICAL_UUID.test(uid))
    throw new RangeError(`not a UUID in 8-4-4-4-12 form: ${JSON.stringify(uid)}`);
  const key = uidKey(uid);
  let end = 0;
  let letters = 0;
  for (; end < key.length; end++) {
    if (/[a-f]/.test(key[end]!)) {
      if (letters === MAX_CASED_LETTERS) break;
      letters++;
    }
  }
  let spellings = [''];
  for (const c of key.slice(0, end)) {
    const cases = /[a-f]/.test(c) ? [c, c.toUpperCase()] : [c];
    spellings = spellings.flatMap((p) => cases.map((x) => p + x));
  }
  return spellings;
}
