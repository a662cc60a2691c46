// The sites one lease may start cooldowns for (COOLDOWN_SITES_PER_LEASE, ports/lease-store.ts). The cap
// bounds a lease reporting ever new targets; it never holds back the two cooldowns a crawler needs most —
// the proxy-wide one (GLOBAL_TARGET: a `banned` report without a target on a lease acquired without one)
// and the one for the site the lease was acquired for — which are not listed on the lease either, so they
// do not count toward it.
import { cooldownSite } from './cooldown.js';
import { GLOBAL_TARGET } from './model.js';

/**
 * What a cooldown for `site` asks of the lease's list of cooled-down sites (`listed`):
 * - `exempt`: the proxy-wide cooldown, or the lease's own site — never capped, never listed;
 * - `listed`: listed already — written again, the list as it is;
 * - `add`: to be listed with the cooldown's write;
 * - `capped`: the lease has listed `cap` other sites already — no cooldown.
 * Only listed sites that count take room: a list written before the exemptions may name them.
 */
export type SiteListing = 'exempt' | 'listed' | 'add' | 'capped';

export function siteListing(
  site: string,
  leaseTarget: string | null,
  listed: readonly string[],
  cap: number,
): SiteListing {
  if (!countsTowardCap(site, leaseTarget)) return 'exempt';
  if (listed.includes(site)) return 'listed';
  const counted = listed.filter((s) => countsTowardCap(s, leaseTarget)).length;
  return counted >= cap ? 'capped' : 'add';
}

/** Whether a cooldown for `site` takes room on its lease: not the proxy-wide one, nor the lease's own site. */
function countsTowardCap(site: string, leaseTarget: string | null): boolean {
  return site !== GLOBAL_TARGET && (leaseTarget === null || site !== cooldownSite(leaseTarget));
}
