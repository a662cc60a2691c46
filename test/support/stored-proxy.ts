// A proxy document as the CLI tests compare it: read straight from Firestore, not through the API under test.
import type { Firestore } from '@google-cloud/firestore';
import { Collections } from '../../shared/src/adapters/firestore/collections.js';
import { proxyFromFirestore } from '../../shared/src/adapters/firestore/proxy-converter.js';

/** The stored document: its spec, generation, and Firestore's update time (moves on every write). */
export async function storedProxy(db: Firestore, name: string) {
  const snap = await db.collection(Collections.proxies).doc(name).get();
  if (!snap.exists) return null;
  const p = proxyFromFirestore(snap.data()!, snap.id);
  return { spec: p.spec, generation: p.generation, updateTime: snap.updateTime!.toDate().toISOString() };
}
