// Cooldowns (seed §7): a rate_limited or banned report keeps (proxy, target) out of selection for
// CooldownWindow. The target falls back report → lease → global; a global cooldown keeps the proxy out
// for every target. A target's cooldown is its host's: the port is not part of the site (cooldownSite). A cooldown is the proxy instance's (metadata.uid) the reported lease was granted on:
// the site pushed back on that VM or endpoint, not on a proxy created again under its name (instance.ts).
import { type ProxyInstance, sameInstance } from './instance.js';
import { type Cooldown, GLOBAL_TARGET, type Lease, type LeaseResult, type LeaseSettings } from './model.js';
import { canonicalTarget } from './target.js';

export function cooldownTarget(reportTarget: string | undefined, leaseTarget: string | null): string {
  return cooldownSite(reportTarget ?? leaseTarget ?? GLOBAL_TARGET);
}

/**
 * The site a cooldown holds for: a canonical target (target.ts) without its port. A site pushes back on
 * the proxy's address whatever port it was reached on: "shop.example:443", "shop.example:8443" and
 * "shop.example" are one site, and a cooldown reported under one spelling holds for every other.
 * A cooldown stored before IPv4-mapped addresses were written as the IPv4 address they map (target.ts)
 * still names that address's site.
 */
export function cooldownSite(target: string): string {
  if (target.startsWith('[')) {
    const host = target.slice(0, target.indexOf(']') + 1);
    return host.startsWith('[::ffff:') ? (canonicalTarget(host) ?? host) : host;
  }
  const colon = target.indexOf(':');
  return colon < 0 ? target : target.slice(0, colon);
}

/** The cooldown a report starts, or null for `ok` (which changes nothing). */
export function cooldownFor(
  lease: Pick<Lease, 'id' | 'proxy' | 'proxyUid' | 'target'>,
  report: { result: LeaseResult; target?: string | undefined },
  settings: LeaseSettings,
  now: Date,
): Cooldown | null {
  if (report.result === 'ok') return null;
  return {
    proxy: lease.proxy,
    proxyUid: lease.proxyUid,
    target: cooldownTarget(report.target, lease.target),
    until: new Date(now.getTime() + settings.cooldownWindowMs),
    reason: report.result,
    leaseId: lease.id,
    reportedAt: now,
  };
}

/**
 * Whether a report's cooldown (ending `next`) needs writing, given the end of the one already running for
 * its proxy instance and target (or the whole proxy: cooldownEnd). Not when that one ends within a step
 * of `next` — a tenth of the window, at least a second: a site answering 429 to every fetch of every lease
 * on a proxy had each report rewrite one document, past Firestore's ~1 sustained write a second to it
 * (contended commits, 503s on /report, retried: more writes). A running cooldown so ends at most a step
 * before "the last report + the window".
 */
export function cooldownWriteDue(runningUntil: Date | null, next: Date, windowMs: number): boolean {
  if (runningUntil === null) return true;
  const step = Math.max(1000, windowMs / 10);
  return runningUntil.getTime() < next.getTime() - step;
}

/** The cooldowns of proxy instance `proxy`, ended or not: of its name and its uid (or of none). */
export function cooldownsOf<T extends Pick<Cooldown, 'proxy' | 'proxyUid'>>(
  all: readonly T[],
  proxy: ProxyInstance,
): T[] {
  return all.filter((c) => c.proxy === proxy.name && sameInstance(c.proxyUid, proxy.uid));
}

/** One stored cooldown as selection needs it. */
export type CooldownMark = Pick<Cooldown, 'until' | 'proxyUid'>;

/**
 * Per proxy name: site (or GLOBAL_TARGET) → the cooldowns held for it, by document id (usually one; two
 * when a document stored under the target with its port before cooldowns were the site's sits beside one
 * stored since — maybe of another instance of the name: each is matched on its own).
 */
export type CooldownIndex = ReadonlyMap<string, ReadonlyMap<string, ReadonlyMap<string, CooldownMark>>>;

/**
 * A request without a target is kept out only by a global cooldown; one with a target also by its own.
 * Only a cooldown of this instance counts (or one stored without a uid).
 */
export function isCoolingDown(
  index: CooldownIndex,
  proxy: ProxyInstance,
  target: string | null,
  now: Date,
): boolean {
  return cooldownEnd(index, proxy, target, now) !== null;
}

/**
 * When the proxy instance is leasable again for the target as far as cooldowns go: the later end of
 * the ones holding now (the proxy-wide one, the target's), or null when none holds.
 */
export function cooldownEnd(
  index: CooldownIndex,
  proxy: ProxyInstance,
  target: string | null,
  now: Date,
): Date | null {
  const byTarget = index.get(proxy.name);
  if (!byTarget) return null;
  const t = now.getTime();
  const holding = (held: ReadonlyMap<string, CooldownMark> | undefined): Date | null => {
    let end: Date | null = null;
    for (const c of held?.values() ?? [])
      if (c.until.getTime() > t && sameInstance(c.proxyUid, proxy.uid) && (!end || c.until > end))
        end = c.until;
    return end;
  };
  const global = holding(byTarget.get(GLOBAL_TARGET));
  const own = target === null ? null : holding(byTarget.get(cooldownSite(target)));
  if (global === null) return own;
  return own === null || global.getTime() >= own.getTime() ? global : own;
}
