// The latest full snapshot, fetched from the controller (GET …/snapshot) when the pull does not serve:
// nothing arrived within firstSnapshotWaitMs of registering, a delta did not apply on our version, or an
// ACK was answered that the controller does not know it. Fetches are at least minFetchIntervalMs apart
// (the controller allows 1/s); "none built yet" or "a newer one is on its way" ends the attempt, since
// Pub/Sub will bring it. A fetch asked for by a delta is wanted until a snapshot of at least that delta's
// version is applied: Pub/Sub re-delivering what runs (at-least-once), or a GET answered from before the
// delta was stored, does not call it off.
import { controlReaction } from '../../../../shared/src/domain/gateway/control-reaction.js';
import { KickLoop, SessionBackoff, sleep } from './loops.js';
import type { ControllerSession } from './session.js';
import type { SessionDeps, SessionSettings } from './session-settings.js';

export class FullSnapshotFetch {
  private readonly loop: KickLoop;
  private readonly backoff: SessionBackoff;
  private wanted = false;
  /** The version the applied snapshot must reach to satisfy what was asked (0: any new one). */
  private atLeast = 0;
  /** Requests so far: one that came while a GET was under way is not answered by that GET. */
  private requests = 0;
  private lastFetchAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly session: ControllerSession,
    private readonly deps: SessionDeps,
    private readonly settings: SessionSettings,
    random: () => number,
    private readonly now: () => number,
    onError: (err: unknown) => void,
  ) {
    this.backoff = new SessionBackoff(settings.backoff, random);
    this.loop = new KickLoop(() => this.untilDone(), onError);
  }

  /** `atLeast`: the version of the delta that did not apply (0: the latest, whatever it is). */
  request(atLeast = 0): void {
    this.wanted = true;
    this.atLeast = Math.max(this.atLeast, atLeast);
    this.requests++;
    void this.loop.kick();
  }

  /**
   * A new session: the backoff grown by the old one's refusals is not this one's — a wait under way ends,
   * and a fetch still wanted goes at once under the new session (the GETs' spacing still holds).
   */
  newSession(): void {
    this.backoff.newSession();
  }

  /** A fetch was asked for and nothing has satisfied it yet (it waits while there is no session). */
  get pending(): boolean {
    return this.wanted;
  }

  /**
   * A snapshot was applied, by whichever path: no fetch is needed any more — unless it was a re-delivery of
   * what already ran, or older than the delta that asked: the worker is still behind.
   */
  satisfied(applied: { version: number; duplicate: boolean }): void {
    if (applied.duplicate || applied.version < this.atLeast) return;
    this.done();
  }

  private done(): void {
    this.wanted = false;
    this.atLeast = 0;
  }

  private async untilDone(): Promise<void> {
    const session = this.session;
    const backoff = this.backoff;
    backoff.reset(); // each run starts from the first step
    while (this.wanted && !session.signal.aborted && !session.draining) {
      const s = session.session;
      if (!s) return; // registration resumes a pending fetch when it is done (ControllerSession.onRegistered)
      const wait = this.lastFetchAt + this.settings.minFetchIntervalMs - this.now();
      if (wait > 0) {
        // Then look again: the pull may have brought a snapshot meanwhile, or the session changed.
        await sleep(wait, session.signal);
        continue;
      }
      this.lastFetchAt = this.now();
      const asked = this.requests;
      const answer = await this.deps.client.latestSnapshot(this.deps.workerId, s.sessionId);
      // Stopped while the answer came and was checked (in slices, over many turns), as a pulled one.
      if (session.signal.aborted) return;
      // Answered as of when it was read: a request made meanwhile (a delta refused) may want a newer one.
      const answered = () => {
        if (this.requests === asked) this.done();
      };
      if (answer.ok) {
        session.counters.fetched++;
        answered();
        // A full snapshot never asks for another one: refused, it is logged and we wait for the next.
        if (!session.refusedBelowFloor(answer.body.ownershipEpoch, 'fetch', answer.body.version)) {
          session.onResult(await session.sink!.applySnapshot(answer.body), 'fetch', answer.body.version);
        }
        continue; // still wanted only if a request came meanwhile that this snapshot did not satisfy
      }
      const reaction = controlReaction(answer.status, answer.code);
      if (reaction === 'no_snapshot' || reaction === 'drop' || reaction === 'await_snapshot') {
        session.logRefusal('snapshot', answer, reaction, null);
        answered();
        continue;
      }
      if (reaction === 'reregister') {
        session.reregister(s.sessionId);
        return;
      }
      // Refused for a session replaced while the GET was out: the backoff is the new session's (started
      // over), not to be stepped by the old one's refusal; the new session's GET goes next (spaced 1 s).
      if (session.session?.sessionId !== s.sessionId) continue;
      const delay = session.delayFor(reaction, answer, backoff);
      session.logRefusal('snapshot', answer, reaction, delay);
      await backoff.wait(delay, session.signal);
    }
  }
}
