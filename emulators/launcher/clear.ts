// Clearing emulator state between tests. Projects are isolated in both emulators, so parallel test
// files use one project each and clear only their own.
import type { HostPort } from '../../shared/src/config/local-ports.js';

const CLEAR_ATTEMPTS = 10;

/**
 * Deletes every document of the project. The emulator's reset can answer 500 when it races a listener
 * stream of that project closing (a test's listener from the previous case), and 409 (ABORTED) while a
 * transaction of a process that just stopped still holds its locks: both retried, bounded (~12 s); any
 * other 4xx is not.
 */
export async function clearFirestore(firestore: HostPort, projectId: string): Promise<void> {
  const url = `http://${firestore.host}:${firestore.port}/emulator/v1/projects/${projectId}/databases/(default)/documents`;
  for (let attempt = 1; ; attempt++) {
    const res = await fetch(url, { method: 'DELETE' });
    await res.body?.cancel();
    if (res.ok) return;
    const transient = res.status >= 500 || res.status === 409;
    if (!transient || attempt >= CLEAR_ATTEMPTS)
      throw new Error(`clearing Firestore failed: HTTP ${res.status} (attempt ${attempt})`);
    await new Promise((r) => setTimeout(r, Math.min(2_000, 100 * 2 ** attempt)));
  }
}

/** Deletes every subscription and topic of the project (the Pub/Sub emulator has no reset endpoint). */
export async function clearPubSub(pubsub: HostPort, projectId: string): Promise<void> {
  const base = `http://${pubsub.host}:${pubsub.port}/v1/projects/${projectId}`;
  for (const [kind, key] of [
    ['subscriptions', 'subscriptions'],
    ['topics', 'topics'],
  ] as const) {
    const res = await fetch(`${base}/${kind}?pageSize=1000`);
    const body = (await res.json()) as Record<string, Array<{ name: string }> | undefined>;
    const names = (body[key] ?? []).map((x) => (typeof x === 'string' ? x : x.name));
    await Promise.all(
      names.map(async (name) => {
        const del = await fetch(`http://${pubsub.host}:${pubsub.port}/v1/${name}`, { method: 'DELETE' });
        await del.body?.cancel();
      }),
    );
  }
}
