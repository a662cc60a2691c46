// providerId = zones/<zone>/instances/<name>: zone-qualified (seed §5), so get and delete name the
// instance wherever it runs. (The seed lets a zone edit move a proxy; here `zone` is immutable, the API's
// 400 immutable_field: functions/api/src/admin/spec-changes.ts.)

export interface InstanceRef {
  zone: string;
  name: string;
}

export const providerIdOf = (ref: InstanceRef): string => `zones/${ref.zone}/instances/${ref.name}`;

const PATTERN = /^zones\/([a-z0-9-]+)\/instances\/([a-z]([-a-z0-9]{0,61}[a-z0-9])?)$/;

/** null for anything that is not a gce providerId (a corrupt status must not become an API call). */
export function parseProviderId(providerId: string): InstanceRef | null {
  const m = PATTERN.exec(providerId);
  return m ? { zone: m[1]!, name: m[2]! } : null;
}

/** The zone of an aggregatedList scope key ("zones/us-central1-a") or a zone URL. */
export const zoneOfScope = (scopeOrUrl: string): string => scopeOrUrl.slice(scopeOrUrl.lastIndexOf('/') + 1);
