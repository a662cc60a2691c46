// A reclaim is asked for one proxy, not for its name: a proxy deleted and created again under the name
// while the reclaim runs is another proxy, which must not start out of the gateway pool for up to a week.
// A reclaim stored before its uid was recorded (uid null) reclaims whatever proxy has the name, as before.
import { uidKey } from '../instance-name.js';

export function reclaimHolds(reclaim: { uid: string | null }, proxyUid: string): boolean {
  return reclaim.uid === null || uidKey(reclaim.uid) === uidKey(proxyUid);
}
