// For routes that take no query parameters (every admin route but the proxy list): one sent is refused
// rather than ignored, as noBody refuses content — `DELETE /v1/proxies/p1?dryRun=true` or
// `POST /v1/jobs/gc-sweep:run?dryRun=true` must not act as if the request had been understood.
import { queryNames } from './query-names.js';

export const noQuery = () => queryNames(() => false, 'this route takes none');
