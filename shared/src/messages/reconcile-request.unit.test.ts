// The reconcile-requests payload, sent strictly and read tolerantly: a newer publisher's field must not
// make an older reconcile take its request for poison (a rollout goes function by function), while a field
// our own publishers misspell must still fail their publish.
import { describe, expect, it } from 'vitest';
import { ReceivedReconcileRequest, ReconcileRequest } from './reconcile-request.js';

const instance = {
  provider: 'gce',
  providerId: 'zones/us-central1-a/instances/pp-1111111122224333844',
  uid: '11111111-2222-4333-8444-555555555555',
};

describe('ReceivedReconcileRequest (what reconcile reads)', () => {
  it('accepts a top-level field it does not know, and drops it', () => {
    const parsed = ReceivedReconcileRequest.safeParse({ proxy: 'p1', reason: 'manual', traceparent: 'x' });
    expect(parsed.success && parsed.data).toEqual({ proxy: 'p1', reason: 'manual' });
  });

  it('keeps the instance of an unrecorded-instance request beside a field it does not know', () => {
    const parsed = ReceivedReconcileRequest.safeParse({
      proxy: 'p1',
      reason: 'unrecorded-instance',
      instance,
      attempt: 3,
    });
    expect(parsed.success && parsed.data).toEqual({ proxy: 'p1', reason: 'unrecorded-instance', instance });
  });

  it('still holds what it knows: instance with unrecorded-instance only, instance strict, a valid name', () => {
    const refused = [
      { proxy: 'p1', reason: 'unrecorded-instance', extra: 1 },
      { proxy: 'p1', reason: 'requeue', instance, extra: 1 },
      { proxy: 'p1', reason: 'unrecorded-instance', instance: { ...instance, zone: 'z' } },
      { proxy: 'Not A Name', reason: 'manual', extra: 1 },
      { reason: 'manual', extra: 1 },
    ];
    expect(refused.map((r) => ReceivedReconcileRequest.safeParse(r).success)).toEqual(
      refused.map(() => false),
    );
  });
});

describe('ReconcileRequest (what every publisher sends)', () => {
  it('refuses a field it does not know', () => {
    expect(ReconcileRequest.safeParse({ proxy: 'p1', reason: 'manual' }).success).toBe(true);
    expect(ReconcileRequest.safeParse({ proxy: 'p1', reason: 'manual', traceparent: 'x' }).success).toBe(
      false,
    );
    expect(
      ReconcileRequest.safeParse({ proxy: 'p1', reason: 'unrecorded-instance', instance, attempt: 3 })
        .success,
    ).toBe(false);
  });
});
