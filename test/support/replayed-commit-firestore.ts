// A Firestore client whose commits land twice: each is sent, and then sent again, and the caller gets the
// second answer — what the client's own retry does when a commit landed but its answer was lost (it
// resends a commit on UNAVAILABLE, RESOURCE_EXHAUSTED and ABORTED). A preconditioned write then fails on
// its own first attempt. `replay()` decides, per commit, whether to send it twice. Everything else goes to
// the real client untouched.
import type { Firestore } from '@google-cloud/firestore';

type Request = (method: string, request: unknown, tag: string, retryCodes?: number[]) => Promise<unknown>;

/** Patches `db` (a test's own client) so that commits `replay()` picks are sent twice; returns how many were. */
export function replayCommits(db: Firestore, replay: () => boolean = () => true): { replayed: number } {
  const client = db as unknown as { request: Request };
  const send = client.request.bind(db);
  const counts = { replayed: 0 };
  client.request = async (method, request, tag, retryCodes) => {
    if (method === 'commit' && replay()) {
      await send(method, request, tag, retryCodes);
      counts.replayed++;
    }
    return send(method, request, tag, retryCodes);
  };
  return counts;
}
