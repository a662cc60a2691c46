// Which machine types exist. GCE answers an unknown one with 400 "Machine type with name 'x' does not
// exist in zone 'z'"; the families below cover what a proxy fleet would plausibly use. Predefined types
// are listed size by size as GCE's machine-family pages list them
// (https://cloud.google.com/compute/docs/general-purpose-machines and the compute- and memory-optimized
// ones), so a size GCE does not sell (e2-standard-3, n2-standard-3, e2-highmem-32) is refused here too.
// Which zones sell which series is not modelled: every type below exists in every emulated zone.
import { link, zonePath } from './links.js';

/** family → shape (standard, highmem, …) → vCPU counts sold as `<family>-<shape>-<vCPUs>`. */
const SIZES: Record<string, Record<string, readonly number[]>> = {
  e2: { standard: [2, 4, 8, 16, 32], highmem: [2, 4, 8, 16], highcpu: [2, 4, 8, 16, 32] },
  n1: {
    standard: [1, 2, 4, 8, 16, 32, 64, 96],
    highmem: [2, 4, 8, 16, 32, 64, 96],
    highcpu: [2, 4, 8, 16, 32, 64, 96],
  },
  n2: {
    standard: [2, 4, 8, 16, 32, 48, 64, 80, 96, 128],
    highmem: [2, 4, 8, 16, 32, 48, 64, 80, 96, 128],
    highcpu: [2, 4, 8, 16, 32, 48, 64, 80, 96],
  },
  n2d: {
    standard: [2, 4, 8, 16, 32, 48, 64, 80, 96, 128, 224],
    highmem: [2, 4, 8, 16, 32, 48, 64, 80, 96],
    highcpu: [2, 4, 8, 16, 32, 48, 64, 80, 96, 128, 224],
  },
  n4: {
    standard: [2, 4, 8, 16, 32, 48, 64, 80],
    highmem: [2, 4, 8, 16, 32, 48, 64, 80],
    highcpu: [2, 4, 8, 16, 32, 48, 64, 80],
  },
  // T2D, T2A and C2 come in the standard shape only.
  t2d: { standard: [1, 2, 4, 8, 16, 32, 48, 60] },
  t2a: { standard: [1, 2, 4, 8, 16, 32, 48] },
  c2: { standard: [4, 8, 16, 30, 60] },
  c2d: {
    standard: [2, 4, 8, 16, 32, 56, 112],
    highmem: [2, 4, 8, 16, 32, 56, 112],
    highcpu: [2, 4, 8, 16, 32, 56, 112],
  },
  // C3, C3D and C4 also sell -lssd and -metal variants; those suffixes are not accepted here.
  c3: {
    standard: [4, 8, 22, 44, 88, 176],
    highmem: [4, 8, 22, 44, 88, 176],
    highcpu: [4, 8, 22, 44, 88, 176],
  },
  c3d: {
    standard: [4, 8, 16, 30, 60, 90, 180, 360],
    highmem: [4, 8, 16, 30, 60, 90, 180, 360],
    highcpu: [4, 8, 16, 30, 60, 90, 180, 360],
  },
  c4: {
    standard: [2, 4, 8, 16, 24, 32, 48, 96, 144, 192, 288],
    highmem: [2, 4, 8, 16, 24, 32, 48, 96, 144, 192, 288],
    highcpu: [2, 4, 8, 16, 24, 32, 48, 96, 144, 192, 288],
  },
  // The memory-optimised families have no standard/highmem/highcpu shapes.
  m1: { ultramem: [40, 80, 160], megamem: [96] },
  m3: { ultramem: [32, 64, 128], megamem: [64, 128] },
};

const PREDEFINED: ReadonlySet<string> = new Set([
  ...Object.entries(SIZES).flatMap(([family, shapes]) =>
    Object.entries(shapes).flatMap(([shape, sizes]) => sizes.map((n) => `${family}-${shape}-${n}`)),
  ),
  // shared-core types
  'e2-micro',
  'e2-small',
  'e2-medium',
  'f1-micro',
  'g1-small',
]);

// Custom machine types (`custom-CPUS-MEM_MB`, N1 without a prefix); GCE's rules on their vCPU count and
// memory per vCPU are not checked.
const CUSTOM = /^(?:(?:e2|n2|n2d|n4)-)?custom-\d{1,3}-\d{3,7}(?:-ext)?$/;

export const machineTypeExists = (name: string) => PREDEFINED.has(name) || CUSTOM.test(name);

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
