// The snapshot-requests payload: a tick or the API's request, sent strictly, read tolerantly.
import { describe, expect, it } from 'vitest';
import { ReceivedSnapshotTopicPayload, SnapshotRequest } from './worker-snapshot-request.js';

describe('the snapshot-requests payload', () => {
  it('reads a request with a field this version does not know, dropping it', () => {
    const parsed = ReceivedSnapshotTopicPayload.safeParse({
      reason: 'register',
      workerId: 'gw-1',
      sessionId: 's-9',
    });
    expect(parsed.success && parsed.data).toEqual({ reason: 'register', workerId: 'gw-1' });
  });

  it('reads a tick with a field this version does not know, dropping it', () => {
    const parsed = ReceivedSnapshotTopicPayload.safeParse({ job: 'snapshot-tick', scheduledAt: 'x' });
    expect(parsed.success && parsed.data).toEqual({ job: 'snapshot-tick' });
  });

  it('still refuses what is neither (no job, no reason) or a known field of the wrong type', () => {
    for (const payload of [{}, { sessionId: 's' }, { reason: '', x: 1 }, { reason: 'r', workerId: 7 }]) {
      expect(ReceivedSnapshotTopicPayload.safeParse(payload).success, JSON.stringify(payload)).toBe(false);
    }
  });

  it('is sent by the API with no field it does not know', () => {
    expect(SnapshotRequest.safeParse({ reason: 'register', workerId: 'gw-1' }).success).toBe(true);
    expect(SnapshotRequest.safeParse({ reason: 'register', workerId: 'gw-1', sessionId: 's' }).success).toBe(
      false,
    );
  });
});
