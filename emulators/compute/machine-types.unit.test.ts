import { describe, expect, it } from 'vitest';
import { checkMachineType, machineTypeExists } from './machine-types.js';

describe('machineTypeExists', () => {
  it.each([
    'e2-micro',
    'e2-small',
    'e2-medium',
    'e2-standard-2',
    'e2-standard-32',
    'e2-highmem-16',
    'e2-highcpu-32',
    'f1-micro',
    'g1-small',
    'n1-standard-1',
    'n1-highmem-96',
    'n2-standard-128',
    'n2-highcpu-96',
    'n2d-highcpu-224',
    'n4-highmem-80',
    't2d-standard-60',
    't2a-standard-48',
    'c2-standard-30',
    'c2d-highmem-112',
    'c3-standard-22',
    'c3d-highcpu-360',
    'c4-standard-288',
    'm1-ultramem-40',
    'm3-megamem-64',
    'custom-2-4096',
    'e2-custom-4-8192',
    'n2-custom-8-65536-ext',
  ])('%s exists', (name) => {
    expect(machineTypeExists(name)).toBe(true);
  });

  it.each([
    // sizes no family sells, though they fit the family-shape-count pattern
    'e2-standard-3',
    'e2-standard-999',
    'n2-standard-3',
    'e2-standard-1',
    'e2-highmem-32',
    'n1-highcpu-1',
    'n2-highcpu-128',
    'n2d-highmem-128',
    'c2-standard-2',
    'c3-standard-2',
    't2a-standard-60',
    // shapes a family does not have
    't2d-highmem-4',
    'c2-highcpu-4',
    'm1-standard-40',
    'e2-ultramem-40',
    // not machine types at all
    'e9-gigantic-1',
    'E2-SMALL',
    'e2-small-2',
    '',
  ])('%s does not', (name) => {
    expect(machineTypeExists(name)).toBe(false);
  });
});

describe('checkMachineType', () => {
  it("answers an unsold size in GCE's words", () => {
    expect(checkMachineType('zones/us-central1-a/machineTypes/e2-standard-3', 'p', 'us-central1-a')).toEqual({
      ok: false,
      detail: "Machine type with name 'e2-standard-3' does not exist in zone 'us-central1-a'.",
    });
  });

  it('normalises a real one to its full URL', () => {
    expect(checkMachineType('zones/us-central1-a/machineTypes/n2-standard-4', 'p', 'us-central1-a')).toEqual({
      ok: true,
      name: 'n2-standard-4',
      url: 'https://www.googleapis.com/compute/v1/projects/p/zones/us-central1-a/machineTypes/n2-standard-4',
    });
  });
});
