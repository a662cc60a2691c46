// A lease id is the lease: renew, report and release take it with any crawler token (docs/leases.md
// § Known limits). Logged, it is `lease-<12 hex of its SHA-256>`: one lease's lines still read alike, and
// whoever reads the logs gets nothing to act on.
import { createHash } from 'node:crypto';

export const loggedLeaseId = (id: string): string =>
  `lease-${createHash('sha256').update(id).digest('hex').slice(0, 12)}`;
