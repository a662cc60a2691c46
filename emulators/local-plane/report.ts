// What `npm start` prints once the plane is up: one line per endpoint (name, URL), what is not built
// yet, and the env a developer exports to point tools and clients at the plane.
export interface Endpoint {
  name: string;
  url: string;
}

export interface PlaneReport {
  elapsedMs: number;
  projectId: string;
  portOffset: number;
  endpoints: Endpoint[];
  notBuilt: string[];
  env: Record<string, string>;
  logDir: string;
  /** The fleet page, with the admin token the page trades for a cookie when the plane knows one. */
  fleetUrl: string;
}

/** The fleet page's link: `?token=` carries the admin token itself (the page trades it for a cookie). */
export const fleetPageUrl = (apiUrl: string, adminToken: string | undefined): string =>
  `${apiUrl}/fleet${adminToken ? `?token=${encodeURIComponent(adminToken)}` : ''}`;

export const elapsed = (ms: number): string => `${(ms / 1000).toFixed(1)}s`;

export function formatReport(r: PlaneReport): string {
  const width = Math.max(...r.endpoints.map((e) => e.name.length)) + 2;
  const lines = [
    '',
    `proxyplane local plane is up in ${elapsed(r.elapsedMs)} (project ${r.projectId}, port offset ${r.portOffset})`,
    '',
    'Endpoints:',
    ...r.endpoints.map((e) => `  ${e.name.padEnd(width)}${e.url}`),
  ];
  lines.push('', `Fleet page (admin; the link holds the admin token, do not share it): ${r.fleetUrl}`);
  if (r.notBuilt.length > 0) lines.push('', 'Not built yet:', ...r.notBuilt.map((n) => `  ${n}`));
  lines.push(
    '',
    'Environment:',
    ...Object.entries(r.env).map(([k, v]) => `  export ${k}=${v}`),
    '',
    `Logs in ${r.logDir}. Ctrl-C stops everything.`,
  );
  return lines.join('\n');
}
