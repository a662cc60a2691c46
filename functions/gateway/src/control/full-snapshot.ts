// The latest full snapshot, fetched from the controller (GET …/snapshot) when the pull does not serve:
// nothing arrived within firstSnapshotWaitMs of registering, a delta did not apply on our version, or an
// ACK was answered that the controller does not know it. Fetches are at least minFetchIntervalMs apart
// (the controller allows 1/s); "none built yet" or "a newer one is on its way" ends the attempt, since
// Pub/Sub will bring it.
import { Backoff } from '../../../../shared/src/domain/gateway/backoff.js';
import { controlReaction } from '../../../../shared/src/domain/gateway/control-reaction.js';
import { KickLoop, sleep } from './loops.js';
import type { ControllerSession } from './session.js';
import type { SessionDeps, SessionSettings } from './session-settings.js';

export class FullSnapshotFetch {
  private readonly loop: KickLoop;
  private wanted = false;
  private lastFetchAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly session: ControllerSession,
    private readonly deps: SessionDeps,
    private readonly settings: SessionSettings,
    private readonly random: () => number,
    private readonly now: () => number,
    onError: (err: unknown) => void,
  ) {
    this.loop = new KickLoop(() => this.untilDone(), onError);
  }

  request(): void {
    this.wanted = true;
    void this.loop.kick();
  }

  /** A fetch was asked for and nothing has satisfied it yet (it waits while there is no session). */
  get pending(): boolean {
    return this.wanted;
  }

  /** A snapshot was applied, by whichever path: no fetch is needed any more. */
  satisfied(): void {
    this.wanted = false;
  }

  private async untilDone(): Promise<void> {
    const session = this.session;
    const backoff = new Backoff(this.settings.backoff, this.random);
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
      const answer = await this.deps.client.latestSnapshot(this.deps.workerId, s.sessionId);
      if (answer.ok) {
        session.counters.fetched++;
        this.wanted = false;
        // A full snapshot never asks for another one: refused, it is logged and we wait for the next.
        session.onResult(await session.sink!.applySnapshot(answer.body), 'fetch', answer.body.version);
        return;
      }
      const reaction = controlReaction(answer.status, answer.code);
      if (reaction === 'no_snapshot' || reaction === 'drop' || reaction === 'await_snapshot') {
        session.logRefusal('snapshot', answer, reaction, null);
        this.wanted = false;
        return;
      }
      if (reaction === 'reregister') {
        session.reregister(s.sessionId);
        return;
      }
      const delay = session.delayFor(reaction, answer, backoff);
      session.logRefusal('snapshot', answer, reaction, delay);
      await sleep(delay, session.signal);
    }
  }
}
