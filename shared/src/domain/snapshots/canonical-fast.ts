// The fast path to the gateway's canonical text (gateway/canonical.ts), for snapshots of 10,000 proxies:
// the generic canonicalJson walks and key-sorts every object (~15 µs a proxy), while the shape of a
// snapshot entry is fixed, so each entry is written with its keys already in canonical order. The output
// is byte-identical to canonicalize(), the definition — canonical-fast.unit.test.ts holds the two to each
// other. The controller keeps per-proxy fragments so that the change digest, the checksum and the delta
// all reuse them instead of serialising the snapshot three times; the worker verifies every snapshot it
// takes with checksumSlices, in slices on the thread that serves its traffic (gateway/slices.ts).
import type {
  GatewayDelta,
  GatewayProxy,
  GatewaySnapshot,
  GatewaySnapshotContent,
} from '../../messages/gateway-snapshot.js';
import {
  canonicalExcludedRoutes,
  canonicalJson,
  canonicalRoute,
  type Sha256Hex,
} from '../gateway/canonical.js';
import { drain, SLICE_ITEMS, type Sliced } from '../gateway/slices.js';

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
/** canonical.ts's iso(): already-normal timestamps (everything the controller writes) pass untouched. */
const iso = (t: string): string => (ISO.test(t) ? t : new Date(Date.parse(t)).toISOString());

// Strings JSON.stringify would copy as they are (no quote, backslash, control character or surrogate) are
// quoted directly: most names, hosts and secret ids, and far cheaper than a call into the serialiser.
function plain(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c === 0x22 || c === 0x5c || (c >= 0xd800 && c <= 0xdfff)) return false;
  }
  return true;
}
const str = (s: string): string => (plain(s) ? `"${s}"` : JSON.stringify(s));
/** JSON.stringify of a finite number (integers here: ports, capacities, versions). */
const num = (n: number): string => (Number.isFinite(n) ? String(n) : 'null');

function attributesJson(a: Readonly<Record<string, string>> | undefined): string {
  if (!a) return '{}';
  const keys = Object.keys(a);
  if (keys.length === 0) return '{}';
  for (let i = 1; i < keys.length; i++) {
    if (keys[i - 1]! > keys[i]!) {
      keys.sort();
      break;
    }
  }
  let out = '{';
  for (let i = 0; i < keys.length; i++) out += `${i ? ',' : ''}${str(keys[i]!)}:${str(a[keys[i]!]!)}`;
  return `${out}}`;
}

/** `"excludedRoutes":[…],` as canonicalProxy normalises it (sorted, unique, omitted when empty), or "". */
function excludedJson(routes: readonly string[] | undefined): string {
  const names = canonicalExcludedRoutes(routes);
  if (!names) return '';
  let out = '"excludedRoutes":[';
  for (let i = 0; i < names.length; i++) out += `${i ? ',' : ''}${str(names[i]!)}`;
  return `${out}],`;
}

/** The two instants every entry of one worker's snapshot shares, formatted once per distinct pair. */
class Instants {
  private expiresAt = '';
  private usableUntil = '';
  private protocol = '';
  mid = '';
  /** `,"protocol":…`: `suspect` sorts between it and `usableUntil`. */
  proto = '';
  tail = '';
  parts(p: GatewayProxy): { mid: string; proto: string; tail: string } {
    if (
      p.expiresAt !== this.expiresAt ||
      p.usableUntil !== this.usableUntil ||
      p.protocol !== this.protocol
    ) {
      this.expiresAt = p.expiresAt;
      this.usableUntil = p.usableUntil;
      this.protocol = p.protocol;
      this.mid = `"expiresAt":${str(iso(p.expiresAt))},`;
      this.proto = `,"protocol":${str(p.protocol)}`;
      this.tail = `,"usableUntil":${str(iso(p.usableUntil))}}`;
    }
    return this;
  }
}

/** canonicalJson(canonicalProxy(p)), with the keys written in their sorted order. */
export function proxyFragment(p: GatewayProxy, instants = new Instants()): string {
  const { mid, proto, tail } = instants.parts(p);
  const cred = p.credentialsRef
    ? `"credentialsRef":{"secret":${str(p.credentialsRef.secret)},"version":${str(p.credentialsRef.version ?? 'latest')}},`
    : '';
  const filters = p.filtersDestinations === true ? '"filtersDestinations":true,' : '';
  const excluded = excludedJson(p.excludedRoutes);
  const suspect = p.suspect === true ? ',"suspect":true' : '';
  return `{"attributes":${attributesJson(p.attributes)},"capacity":${num(p.capacity)},${cred}${excluded}${mid}${filters}"host":${str(p.host)},"name":${str(p.name)},"port":${num(p.port)}${proto}${suspect}${tail}`;
}

/** A snapshot's content with its proxies sorted by name and each one's canonical fragment beside it. */
export interface Prepared {
  content: GatewaySnapshotContent;
  fragments: string[];
  routingText: string;
}

const byName = (a: GatewayProxy, b: GatewayProxy) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

const isSorted = (xs: readonly GatewayProxy[]) => xs.every((x, i) => i === 0 || xs[i - 1]!.name < x.name);

export function prepare(content: GatewaySnapshotContent): Prepared {
  return drain(prepareSlices(content));
}

/** prepare(), yielding every SLICE_ITEMS fragments (slices.ts). */
export function* prepareSlices(content: GatewaySnapshotContent): Sliced<Prepared> {
  const proxies = isSorted(content.proxies) ? content.proxies : [...content.proxies].sort(byName);
  const instants = new Instants();
  const fragments = new Array<string>(proxies.length);
  for (let i = 0; i < proxies.length; i++) {
    fragments[i] = proxyFragment(proxies[i]!, instants);
    if (i % SLICE_ITEMS === SLICE_ITEMS - 1) yield;
  }
  return {
    content: { ...content, proxies },
    fragments,
    routingText: canonicalJson(content.routing.map(canonicalRoute)),
  };
}

/** canonicalize(content): the keys of canonicalize's object, in sorted order. */
export function canonicalText(p: Prepared, version: number, generatedAt: string): string {
  const c = p.content;
  return (
    `{"generatedAt":${str(iso(generatedAt))},"ownershipEpoch":${num(c.ownershipEpoch)},` +
    `"proxies":[${p.fragments.join(',')}],"routing":${p.routingText},"schemaVersion":${num(c.schemaVersion)},` +
    `"validUntil":${str(iso(c.validUntil))},"version":${num(version)},"workerId":${str(c.workerId)}}`
  );
}

/**
 * snapshotChecksum(s) (gateway/canonical.ts) at a third to a fifth of its CPU: 25–50 ms for 10,000 proxies
 * where the generic walk took 110–210 (this machine, 2026-12-04; `npm run bench -- snapshot`
 * workerVerifyMs). What the worker verifies snapshots and deltas with.
 */
export function fastSnapshotChecksum(s: GatewaySnapshotContent | GatewaySnapshot, sha256: Sha256Hex): string {
  return drain(checksumSlices(s, sha256));
}

/** fastSnapshotChecksum(), yielding between slices of its proxies (slices.ts). */
export function* checksumSlices(
  s: GatewaySnapshotContent | GatewaySnapshot,
  sha256: Sha256Hex,
): Sliced<string> {
  const prepared = yield* prepareSlices(s);
  const text = canonicalText(prepared, s.version, s.generatedAt);
  // The text of 10,000 entries is ~3 MB: joining it and hashing it are a slice each.
  if (s.proxies.length > SLICE_ITEMS) yield;
  return sha256(text);
}

/** The full snapshot of `version`, checksum filled in (= snapshotChecksum of it). */
export function buildPrepared(p: Prepared, version: number, sha256: Sha256Hex): GatewaySnapshot {
  const c = p.content;
  return { kind: 'full', ...c, version, checksum: sha256(canonicalText(p, version, c.generatedAt)) };
}

/** The delta turning `base` into `next` (gateway/delta.ts's buildDelta, on fragments already made). */
export function deltaPrepared(
  base: Prepared,
  baseVersion: number,
  next: GatewaySnapshot,
  nextP: Prepared,
): GatewayDelta {
  const before = new Map<string, string>();
  base.content.proxies.forEach((x, i) => {
    before.set(x.name, base.fragments[i]!);
  });
  const after = new Set(next.proxies.map((x) => x.name));
  const upserts = next.proxies.filter((x, i) => before.get(x.name) !== nextP.fragments[i]);
  const removals = base.content.proxies.filter((x) => !after.has(x.name)).map((x) => x.name);
  return {
    kind: 'delta',
    schemaVersion: next.schemaVersion,
    version: next.version,
    baseVersion,
    ownershipEpoch: next.ownershipEpoch,
    workerId: next.workerId,
    generatedAt: next.generatedAt,
    validUntil: next.validUntil,
    upserts,
    removals,
    ...(base.routingText !== nextP.routingText ? { routing: next.routing } : {}),
    checksum: next.checksum,
  };
}
