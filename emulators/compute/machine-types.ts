// Which machine types exist. GCE answers an unknown one with 400 "Machine type with name 'x' does not
// exist in zone 'z'"; the families below cover what a proxy fleet would plausibly use.
import { link, zonePath } from './links.js';

const PREDEFINED = [
  /^(?:e2|n1|n2|n2d|n4|t2d|t2a|c2|c2d|c3|c3d|c4|m1|m3)-(?:standard|highcpu|highmem)-\d{1,3}$/,
  /^e2-(?:micro|small|medium)$/,
  /^(?:f1-micro|g1-small)$/,
  /^(?:(?:e2|n2|n2d|n4)-)?custom-\d{1,3}-\d{3,7}(?:-ext)?$/,
];

export const machineTypeExists = (name: string) => PREDEFINED.some((re) => re.test(name));

const FORM =
  /^(?:(?:https:\/\/(?:www|compute)\.googleapis\.com\/compute\/v1\/)?projects\/([^/]+)\/)?zones\/([^/]+)\/machineTypes\/([^/]+)$/;

export type MachineTypeCheck = { ok: true; name: string; url: string } | { ok: false; detail: string };

/** Accepts the full URL or the partial forms GCE accepts; the zone must be the request's zone. */
export function checkMachineType(value: string, project: string, zone: string): MachineTypeCheck {
  const m = FORM.exec(value);
  if (!m)
    return {
      ok: false,
      detail: 'Must be a URL or partial URL of a machine type (zones/ZONE/machineTypes/TYPE).',
    };
  const [, refProject, refZone, name] = m as unknown as [string, string | undefined, string, string];
  if (refZone !== zone) return { ok: false, detail: 'Cross-zone references are not allowed.' };
  if (refProject !== undefined && refProject !== project) {
    return { ok: false, detail: 'Cross-project references are not allowed for machine types.' };
  }
  if (!machineTypeExists(name)) {
    return { ok: false, detail: `Machine type with name '${name}' does not exist in zone '${zone}'.` };
  }
  return { ok: true, name, url: link(`${zonePath(project, zone)}/machineTypes/${name}`) };
}
