// ACKs of the applied snapshot (docs/gateway-control-plane.md § ACK; seed §3): the controller's ACK bound
// is what runtime reports sit on, so every applied snapshot is ACKed until the bound matches it. A
// refusal that a full snapshot can cure fetches one — once per version, since the same refusal again
// means the controller no longer knows it; one that says "a newer snapshot is coming" waits for it.
import { controlReaction } from '../../../../shared/src/domain/gateway/control-reaction.js';
import { KickLoop, SessionBackoff } from './loops.js';
import type { ReportLoop } from './reporting.js';
import type { ControllerSession } from './session.js';
import type { Applied, SessionDeps, SessionSettings } from './session-settings.js';

export type AckBound = { version: number; epoch: number };

/** Whether the controller's bound already sits on the applied snapshot (nothing to ACK). */
export function isAcked(bound: AckBound | null, a: Applied): boolean {
  return bound !== null && bound.version === a.version && bound.epoch === a.ownershipEpoch;
}

export class AckLoop {
  private readonly loop: KickLoop;
  private readonly backoff: SessionBackoff;
  private resyncedFor: number | null = null;
  /** The applied snapshot whose ACK the controller refused for good ("wait for the next snapshot"). */
  private gaveUp: Applied | null = null;

  constructor(
    private readonly session: ControllerSession,
    private readonly deps: SessionDeps,
    private readonly reports: ReportLoop,
    settings: SessionSettings,
    random: () => number,
    onError: (err: unknown) => void,
  ) {
    this.backoff = new SessionBackoff(settings.backoff, random);
    this.loop = new KickLoop(() => this.untilDone(), onError);
  }

  /** `retry`: the controller asked for an ACK (no_ack / ack_bound_mismatch): try even a refused one again. */
  kick(retry = false): void {
    if (retry) this.gaveUp = null;
    void this.loop.kick();
  }

  /**
   * A new session: a refusal under the old one says nothing about this one, and its backoff is not this
   * one's (a wait under way ends: the loop goes round under the new session at once).
   */
  newSession(): void {
    this.resyncedFor = null;
    this.gaveUp = null;
    this.backoff.newSession();
  }

  private async untilDone(): Promise<void> {
    const session = this.session;
    const backoff = this.backoff;
    backoff.reset(); // each run starts from the first step
    for (;;) {
      const s = session.session;
      const a = session.applied;
      if (!s || !a || session.signal.aborted) return;
      if (isAcked(session.ackBound, a)) return;
      if (this.gaveUp === a) return;
      const answer = await session.exclusive(() =>
        this.deps.client.ack(this.deps.workerId, {
          sessionId: s.sessionId,
          version: a.version,
          epoch: a.ownershipEpoch,
          checksum: a.checksum,
        }),
      );
      // Answered for a session replaced while the call was out (registered again meanwhile): whatever it
      // says is of that session — no bound, no refusal to give up or fetch on (newSession cleared those
      // for the new one: set now, a refusal of session-1's ACK kept session-2 from ever ACKing), no backoff
      // step. Round again, under the current session (none: registration kicks the loop once it is back).
      if (session.session?.sessionId !== s.sessionId) continue;
      if (answer.ok) {
        backoff.reset();
        session.heard();
        session.ackBound = { version: answer.body.acceptedVersion, epoch: answer.body.acceptedEpoch };
        this.reports.reportSoon();
        continue; // a newer snapshot may have been applied meanwhile
      }
      const reaction = controlReaction(answer.status, answer.code);
      if (reaction === 'resync') {
        // Fetch once per version: the same refusal again means the controller no longer knows it.
        if (this.resyncedFor !== a.version) {
          this.resyncedFor = a.version;
          session.logRefusal('ack', answer, reaction, null);
          session.requestFull();
        } else {
          session.logRefusal('ack', answer, 'await_snapshot', null);
          this.gaveUp = a;
        }
        return;
      }
      if (reaction === 'reregister') {
        session.reregister(s.sessionId);
        return;
      }
      if (reaction === 'await_snapshot' || reaction === 'drop' || reaction === 'fatal') {
        session.logRefusal('ack', answer, reaction, null);
        this.gaveUp = a;
        return;
      }
      const delay = session.delayFor(reaction, answer, backoff);
      session.logRefusal('ack', answer, reaction, delay);
      await backoff.wait(delay, session.signal);
    }
  }
}
