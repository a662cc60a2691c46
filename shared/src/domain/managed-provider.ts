// The providers a managed proxy may name: those reconcile has an adapter for (GCE's alone,
// functions/reconcile/src/wiring.ts). Any other name was accepted, then latched PermanentError by
// reconcile ("provider … is not registered") — and `provider` is immutable, so only a delete and a
// re-create got out of it. The admin API refuses it with a 400 instead. A stored spec that already names
// one keeps it (its PUT/PATCH are judged on what they change, as the other spec checks are).
import type { ProxySpec } from './proxy.js';

export const MANAGED_PROVIDERS: readonly string[] = ['gce'];

/** The provider `next` names when it is a managed spec no adapter serves (and not already stored); else null. */
export function unsupportedManagedProvider(next: ProxySpec, current?: ProxySpec): string | null {
  if (next.mode !== 'managed' || MANAGED_PROVIDERS.includes(next.provider)) return null;
  if (current?.mode === 'managed' && current.provider === next.provider) return null;
  return next.provider;
}
