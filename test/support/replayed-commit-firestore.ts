// A Firestore client whose commits land twice: each is sent, and then sent again, and the caller gets the
// second answer — what the client's own retry does when a commit landed but its answer was lost (it
// resends a commit on UNAVAILABLE, RESOURCE_EXHAUSTED and ABORTED). A preconditioned write then fails on
// its own first attempt. `replay()` decides, per commit, whether to send it twice. Everything else goes to
// the real client untouched. failCommitsAfterLanding() is the other way an answer is lost: the commit
// lands and the call fails anyway, with another status than a conflict.
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

/**
 * Patches `db` so that every commit that lands then fails with gRPC status `code` — a commit whose answer
 * was lost and whose call the client then gave up on (DEADLINE_EXCEEDED, a last UNAVAILABLE), not a resend
 * failing its own precondition as under replayCommits(). A commit that does not land fails as it does.
 * Returns how many landed and failed.
 */
export function failCommitsAfterLanding(db: Firestore, code: number): { failed: number } {
  const client = db as unknown as { request: Request };
  const send = client.request.bind(db);
  const counts = { failed: 0 };
  client.request = async (method, request, tag, retryCodes) => {
    const answer = await send(method, request, tag, retryCodes);
    if (method !== 'commit') return answer;
    counts.failed++;
    throw Object.assign(new Error(`${code} commit answer lost`), { code });
  };
  return counts;
}

/**
 * Patches `db` so that its next commit lands and then fails with gRPC status `code`, once; the commits
 * after it go through as they do. Inside a transaction the client then runs the transaction again.
 */
export function failNextCommitAfterLanding(db: Firestore, code: number): void {
  const client = db as unknown as { request: (method: string, ...rest: unknown[]) => Promise<unknown> };
  const send = client.request.bind(db);
  client.request = async (method, ...rest) => {
    const answer = await send(method, ...rest);
    if (method !== 'commit') return answer;
    client.request = send;
    throw Object.assign(new Error(`${code} commit answer lost`), { code });
  };
}

/**
 * Patches `db` to count the document writes its commits carry (batched writes too): a write that leaves
 * a document as it was — no new update time — counts as well.
 */
export function countCommitWrites(db: Firestore): { writes: number } {
  const client = db as unknown as { request: Request };
  const send = client.request.bind(db);
  const counts = { writes: 0 };
  client.request = (method, request, tag, retryCodes) => {
    if (method === 'commit' || method === 'batchWrite')
      counts.writes += (request as { writes?: unknown[] }).writes?.length ?? 0;
    return send(method, request, tag, retryCodes);
  };
  return counts;
}
