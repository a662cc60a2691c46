import { describe, expect, it } from 'vitest';
import { condition } from '../testing/healthy-conditions.js';
import { computePhase } from './phase.js';
import { type Condition, emptyStatus, type Phase, type ProxyStatus } from './proxy.js';

const at = new Date('2026-01-01T00:00:00Z');
const cond = (type: string, status: Condition['status'], reason = 'R') => condition(type, status, reason, at);
const st = (over: Partial<ProxyStatus>): ProxyStatus => ({ ...emptyStatus(), ...over });

describe('computePhase', () => {
  it.each<[string, Date | null, ProxyStatus, Phase]>([
    ['nothing yet', null, st({}), 'Pending'],
    [
      'quota before any instance',
      null,
      st({ conditions: [cond('Provisioned', 'False', 'QuotaExceeded')] }),
      'Pending',
    ],
    ['instance requested', null, st({ providerId: 'zones/z/instances/i' }), 'Provisioning'],
    [
      'provisioned, no health verdict',
      null,
      st({ conditions: [cond('Provisioned', 'True')] }),
      'Provisioned',
    ],
    [
      'provisioned and healthy',
      null,
      st({ conditions: [cond('Provisioned', 'True'), cond('Healthy', 'True')] }),
      'Ready',
    ],
    [
      'provisioned and unhealthy',
      null,
      st({ conditions: [cond('Provisioned', 'True'), cond('Healthy', 'False')] }),
      'Unhealthy',
    ],
    [
      'healthy but not provisioned',
      null,
      st({ providerId: 'p', conditions: [cond('Provisioned', 'False'), cond('Healthy', 'True')] }),
      'Provisioning',
    ],
    ['permanent error', null, st({ conditions: [cond('Provisioned', 'False', 'PermanentError')] }), 'Failed'],
    ['deletion wins over everything', at, st({ conditions: [cond('Provisioned', 'True')] }), 'Deleting'],
  ])('%s → %s', (_label, deletionRequestedAt, status, phase) => {
    expect(computePhase({ deletionRequestedAt }, status)).toBe(phase);
  });
});
