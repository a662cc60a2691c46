// A uid for a short test name, so a test can say `uidFor('gone')` where an instance must be named for its
// uid (instanceNameFromUid needs a UUID). Pure (FNV-1a, four seeds: 128 bits), for the domain's tests too.

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const SEEDS = [0x811c9dc5, 0x01000193, 0x9e3779b9, 0x85ebca6b];

function fnv1a(key: string, seed: number): string {
  let h = seed >>> 0;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193) >>> 0;
  return h.toString(16).padStart(8, '0');
}

/** The same UUID for the same name, a different one for each other name; a UUID stays itself. */
export function uidFor(key: string): string {
  if (UUID.test(key)) return key;
  const h = SEEDS.map((seed) => fnv1a(key, seed)).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}
