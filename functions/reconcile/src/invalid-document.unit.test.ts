import { describe, expect, it } from 'vitest';
import { memoryLogger } from '../../../shared/src/adapters/log/json-logger.js';
import { type ConditionalWrite, InvalidStoredProxy } from '../../../shared/src/ports/proxy-store.js';
import { onInvalidDocument } from './invalid-document.js';
import { TransientReconcileError } from './pass.js';

const invalid = (deletionRequestedAt: Date | null, uid: string | null = 'uid-1') =>
  new InvalidStoredProxy({
    name: 'broken',
    version: '1700000000.000000001',
    issues: [{ path: 'spec.port', code: 'invalid_type', message: 'Invalid input: expected number' }],
    uid,
    generation: 3,
    deletionRequestedAt,
  });

function deps(outcome: ConditionalWrite = 'written') {
  const deleted: Array<{ name: string; version: string }> = [];
  const released: Array<{ proxy: string; uid: string }> = [];
  const log = memoryLogger();
  return {
    deleted,
    released,
    log,
    d: {
      store: {
        deleteDocument: async (name: string, version: string) => {
          deleted.push({ name, version });
          return outcome;
        },
      },
      slots: { release: async (h: { proxy: string; uid: string }) => Boolean(released.push(h)) },
      log,
    },
  };
}

describe('onInvalidDocument', () => {
  it('leaves a document nobody asked to delete, and says which fields fail', async () => {
    const { d, deleted, log } = deps();
    expect(await onInvalidDocument(d, invalid(null))).toBe('left');
    expect(deleted).toEqual([]);
    expect(log.lines).toEqual([
      expect.objectContaining({
        severity: 'ERROR',
        event: 'reconcile.invalid_document',
        proxy: 'broken',
        fields: ['spec.port'],
      }),
    ]);
  });

  it('removes one whose deletion was requested, at the version read, and gives its slot back', async () => {
    const { d, deleted, released, log } = deps();
    expect(await onInvalidDocument(d, invalid(new Date('2026-01-01T00:00:00Z')))).toBe('removed');
    expect(deleted).toEqual([{ name: 'broken', version: '1700000000.000000001' }]);
    expect(released).toEqual([{ proxy: 'broken', uid: 'uid-1' }]);
    expect(log.lines).toEqual([
      expect.objectContaining({
        severity: 'WARNING',
        event: 'reconcile.invalid_document_deleted',
        uid: 'uid-1',
      }),
    ]);
  });

  it('removes one without a readable uid too (no slot to give back)', async () => {
    const { d, deleted, released } = deps();
    expect(await onInvalidDocument(d, invalid(new Date(), null))).toBe('removed');
    expect(deleted).toHaveLength(1);
    expect(released).toEqual([]);
  });

  it('throws for a redelivery when the document changed since it was read', async () => {
    const { d } = deps('conflict');
    await expect(onInvalidDocument(d, invalid(new Date()))).rejects.toBeInstanceOf(TransientReconcileError);
  });

  it('is done when the document is already gone', async () => {
    const { d, log } = deps('gone');
    expect(await onInvalidDocument(d, invalid(new Date()))).toBe('gone');
    expect(log.lines).toEqual([]);
  });
});
