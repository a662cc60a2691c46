// A proxy document that no longer fits the model (hand-edited, half-written by an older version, a field
// of the wrong type) cannot be reconciled: no pass can decide anything from it, and no retry fixes it. So
// the delivery is acknowledged, never retried, and the document is left alone — unless its deletion was
// requested (DELETE works on such a document: it writes deletionRequestedAt alone). Then the document is
// removed here, at the version read. Its instance is not touched: a providerId or uid read from a broken
// document cannot be trusted to name this proxy's VM (a hand-edit may point it at another's), whereas the
// orphan GC's rule (ownership label, older than MinAge, uid in no document) holds on the instance itself.
// Once the document is gone its uid is in no document, and the next sweep past MinAge deletes the VM
// (docs/gc-and-rotation.md). A replacement slot the proxy held is given back, as reconcileDelete does.
import type { Logger } from '../../../shared/src/adapters/log/json-logger.js';
import type { InvalidStoredProxy, ProxyStore } from '../../../shared/src/ports/proxy-store.js';
import type { ReplacementSlots } from '../../../shared/src/ports/replacement-slots.js';
import { TransientReconcileError } from './pass.js';

export interface InvalidDocumentDeps {
  store: Pick<ProxyStore, 'deleteDocument'>;
  slots: Pick<ReplacementSlots, 'release'>;
  log: Logger;
}

export type InvalidDocumentOutcome = 'left' | 'removed' | 'gone';

export async function onInvalidDocument(
  deps: InvalidDocumentDeps,
  err: InvalidStoredProxy,
): Promise<InvalidDocumentOutcome> {
  const { name, uid, version, issues, deletionRequestedAt } = err.stored;
  const fields = { proxy: name, uid, fields: issues.map((i) => i.path), issues };
  if (!deletionRequestedAt) {
    deps.log.error('proxy document does not fit the model; acknowledged (repair it, or DELETE the proxy)', {
      event: 'reconcile.invalid_document',
      ...fields,
    });
    return 'left';
  }
  if (uid) await deps.slots.release({ proxy: name, uid });
  const outcome = await deps.store.deleteDocument(name, version);
  // Changed since it was read (repaired, say): the redelivery reads it again and decides on what is there.
  if (outcome === 'conflict') {
    throw new TransientReconcileError(`proxy document ${name} changed while its removal was being decided`);
  }
  if (outcome === 'gone') return 'gone';
  deps.log.warn('removed a proxy document that does not fit the model, as its deletion asked', {
    event: 'reconcile.invalid_document_deleted',
    ...fields,
    instance: 'left to the orphan GC: deleted at its next sweep once older than GC_MIN_AGE_SECONDS',
  });
  return 'removed';
}
