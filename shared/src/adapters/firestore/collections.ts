// Every Firestore collection name, in one place (Terraform's indexes and TTL policies name them too).
export const Collections = {
  proxies: 'proxies',
  health: 'health',
  leases: 'leases',
  leaseState: 'leaseState',
  cooldowns: 'cooldowns',
  workers: 'workers',
  snapshots: 'snapshots',
  jobRuns: 'jobRuns',
} as const;
