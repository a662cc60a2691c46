// The zones the emulator serves. A realistic spread across regions so that multi-zone placement and
// aggregatedList across scopes are exercised as on GCE; any other zone answers 400 "Unknown zone",
// exactly as GCE does for a zone that does not exist (e.g. a region name passed as a zone).

export const DEFAULT_ZONES: readonly string[] = [
  'us-central1-a',
  'us-central1-b',
  'us-central1-c',
  'us-central1-f',
  'us-east1-b',
  'us-east1-c',
  'us-east1-d',
  'europe-west1-b',
  'europe-west1-c',
  'europe-west1-d',
  'asia-east1-a',
];

const ZONE_NAME = /^[a-z]+-[a-z]+\d+-[a-z]$/;

export function regionOf(zone: string): string {
  return zone.slice(0, zone.lastIndexOf('-'));
}

export function assertZoneNames(zones: readonly string[]): void {
  for (const zone of zones) {
    if (!ZONE_NAME.test(zone)) throw new Error(`not a zone name: ${zone}`);
  }
}
