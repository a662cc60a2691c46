import { describe, expect, it } from 'vitest';
import { GceError } from './errors.js';
import { instanceBody } from './testing.js';
import { validateInsert } from './validate.js';

const zone = 'us-central1-a';
const valid = () =>
  instanceBody('pp-1', { zone, labels: { 'managed-by': 'proxyplane' } }) as Record<string, unknown>;

function problems(body: unknown): Array<{ reason: string; message: string }> {
  try {
    validateInsert(body, 'p', zone);
    return [];
  } catch (err) {
    expect(err).toBeInstanceOf(GceError);
    return (err as GceError).errors;
  }
}

describe('validateInsert', () => {
  it('normalises a valid body: full machineType URL, default scheduling, disk source', () => {
    const spec = validateInsert(valid(), 'p', zone);
    expect(spec.machineType).toBe(
      'https://www.googleapis.com/compute/v1/projects/p/zones/us-central1-a/machineTypes/e2-small',
    );
    expect(spec.scheduling).toEqual({
      preemptible: false,
      automaticRestart: true,
      onHostMaintenance: 'MIGRATE',
      provisioningModel: 'STANDARD',
    });
    expect(spec.disks[0]).toMatchObject({ boot: true, diskName: 'pp-1', diskSizeGb: '10' });
    expect(spec.networkInterfaces[0]!.accessConfigs).toHaveLength(1);
  });

  it('treats SPOT as preemptible with TERMINATE on host maintenance', () => {
    const spec = validateInsert({ ...valid(), scheduling: { provisioningModel: 'SPOT' } }, 'p', zone);
    expect(spec.scheduling).toMatchObject({
      preemptible: true,
      automaticRestart: false,
      onHostMaintenance: 'TERMINATE',
    });
  });

  it.each([
    ['name', { name: 'a'.repeat(64) }, 'invalid', /resource\.name/],
    ['name', { name: '-x' }, 'invalid', /resource\.name/],
    ['name', { name: 'x-' }, 'invalid', /resource\.name/],
    ['name', { name: undefined }, 'required', /resource\.name/],
    ['machineType', { machineType: 'e2-small' }, 'invalid', /partial URL/],
    [
      'machineType',
      { machineType: 'projects/other/zones/us-central1-a/machineTypes/e2-small' },
      'invalid',
      /Cross-project/,
    ],
    ['machineType', { machineType: 'zones/us-central1-a/machineTypes/n2-standard-4' }, null, null],
    ['machineType', { machineType: 'zones/us-central1-a/machineTypes/custom-2-4096' }, null, null],
    ['labels', { labels: { k: 'UPPER' } }, 'invalid', /Label value 'UPPER'/],
    [
      'labels',
      { labels: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, 'v'])) },
      'invalid',
      /At most 64/,
    ],
    ['labels', { labels: { 'proxyplane-uid': '' } }, null, null],
    [
      'metadata',
      { metadata: { items: [{ key: 'bad key', value: 'v' }] } },
      'invalid',
      /metadata\.items\[0\]\.key/,
    ],
    [
      'metadata',
      { metadata: { items: [{ key: 'big', value: 'x'.repeat(300 * 1024) }] } },
      'invalid',
      /exceeds/,
    ],
    ['disks', { disks: 'nope' }, 'invalid', /resource\.disks/],
    [
      'disks',
      { disks: [{ boot: false, initializeParams: { sourceImage: 'global/images/x' } }] },
      'invalid',
      /Boot disk/,
    ],
    ['disks', { disks: [{ initializeParams: { sourceImage: 'not an image' } }] }, 'invalid', /sourceImage/],
    [
      'disks',
      { disks: [{ initializeParams: { sourceImage: 'global/images/x', diskSizeGb: '5' } }] },
      'invalid',
      /diskSizeGb/,
    ],
    [
      'networkInterfaces',
      { networkInterfaces: [{ accessConfigs: [{}, {}] }] },
      'invalid',
      /one access config/,
    ],
  ])('%s %j', (_field, patch, reason, message) => {
    const found = problems({ ...valid(), ...patch });
    if (reason === null) expect(found).toEqual([]);
    else {
      expect(found[0]?.reason).toBe(reason);
      expect(found[0]?.message).toMatch(message!);
    }
  });

  it.each([null, 'x', 42, [1]])('rejects a non-object body %j', (body) => {
    expect(problems(body)[0]?.reason).toBe('invalid');
  });
});
