// Cooldowns (seed §7): a rate_limited or banned report keeps (proxy, target) out of selection for
// CooldownWindow. The target falls back report → lease → global; a global cooldown keeps the proxy out
// for every target.
import { type Cooldown, GLOBAL_TARGET, type Lease, type LeaseResult, type LeaseSettings } from './model.js';

export function cooldownTarget(reportTarget: string | undefined, leaseTarget: string | null): string {
  return reportTarget ?? leaseTarget ?? GLOBAL_TARGET;
}

/** The cooldown a report starts, or null for `ok` (which changes nothing). */
export function cooldownFor(
  lease: Pick<Lease, 'id' | 'proxy' | 'target'>,
  report: { result: LeaseResult; target?: string | undefined },
  settings: LeaseSettings,
  now: Date,
): Cooldown | null {
  if (report.result === 'ok') return null;
  return {
    proxy: lease.proxy,
    target: cooldownTarget(report.target, lease.target),
    until: new Date(now.getTime() + settings.cooldownWindowMs),
    reason: report.result,
    leaseId: lease.id,
    reportedAt: now,
  };
}

/** Per proxy: target (or GLOBAL_TARGET) → until. */
export type CooldownIndex = ReadonlyMap<string, ReadonlyMap<string, Date>>;

/** A request without a target is kept out only by a global cooldown; one with a target also by its own. */
export function isCoolingDown(
  index: CooldownIndex,
  proxy: string,
  target: string | null,
  now: Date,
): boolean {
  const byTarget = index.get(proxy);
  if (!byTarget) return false;
  const t = now.getTime();
  const global = byTarget.get(GLOBAL_TARGET);
  if (global && global.getTime() > t) return true;
  if (target === null) return false;
  const own = byTarget.get(target);
  return own !== undefined && own.getTime() > t;
}
