// Resource URLs as GCE writes them in selfLink, zone, machineType, targetLink…: always the public API
// base, whatever endpoint the request came through, because clients treat them as identifiers (the
// last path segment of `zone` is the zone name) rather than as addresses to call.

export const API_BASE = 'https://www.googleapis.com/compute/v1';

export const projectPath = (project: string) => `projects/${project}`;
export const zonePath = (project: string, zone: string) => `projects/${project}/zones/${zone}`;
export const instancePath = (project: string, zone: string, name: string) =>
  `${zonePath(project, zone)}/instances/${name}`;
export const operationPath = (project: string, zone: string, name: string) =>
  `${zonePath(project, zone)}/operations/${name}`;

export const link = (path: string) => `${API_BASE}/${path}`;

/** The last segment of a resource URL or partial URL ("zones/z/machineTypes/e2-small" → "e2-small"). */
export const lastSegment = (url: string) => url.slice(url.lastIndexOf('/') + 1);
