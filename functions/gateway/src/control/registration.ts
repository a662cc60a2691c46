// Registration with the controller (docs/gateway-control-plane.md § Registration, § Protocol version):
// one attempt after another until a session is granted, with backoff on refusals, stepping the offered
// protocol version down when the control plane does not speak it. What a granted session changes is the
// session's business (ControllerSession.onRegistered).
import { Backoff } from '../../../../shared/src/domain/gateway/backoff.js';
import { controlReaction } from '../../../../shared/src/domain/gateway/control-reaction.js';
import { KickLoop, sleep } from './loops.js';
import type { ControllerSession } from './session.js';
import { type SessionDeps, SessionFatalError, type SessionSettings } from './session-settings.js';

/**
 * The protocol versions this worker speaks (shared/src/domain/workers/protocol.ts; 3 = snapshot entries
 * may carry `excludedRoutes`, which compile.ts turns into routes without the proxy; 4 = entries may have
 * `protocol: "socks5"`, which the proxy listener and the fetch endpoint chain through with a SOCKS5
 * CONNECT, socks5-handshake.ts; 5 = entries may carry `suspect`, which compile.ts turns into routes that
 * pick the proxy only when no other candidate is usable, pick.ts). It offers the highest;
 * a control plane that does not speak it refuses, and the worker offers the next one down, so a gateway
 * may be deployed before or after the API. Refused at the lowest, it stops (contract §7: no silent
 * degradation below what it can do).
 */
export const WORKER_PROTOCOL_VERSION = 5;
export const WORKER_PROTOCOL_MIN = 1;

/** Single-flight: a kick while registering (several calls noticed the lost session) adds no attempt. */
export class RegisterLoop {
  private readonly loop: KickLoop;
  /** The register call awaiting its answer (and its session taken, if granted), if any; never rejects. */
  inFlight: Promise<unknown> | null = null;

  constructor(
    private readonly session: ControllerSession,
    private readonly deps: SessionDeps,
    private readonly settings: SessionSettings,
    private readonly random: () => number,
    onError: (err: unknown) => void,
  ) {
    this.loop = new KickLoop(() => this.untilDone(), onError);
  }

  kick(): Promise<void> {
    return this.loop.kick();
  }

  /** One register call, and the session it grants taken at once: `inFlight` settles after both. */
  private async attempt(offered: number) {
    const answer = await this.deps.client.register({
      workerId: this.deps.workerId,
      instanceId: this.deps.instanceId,
      zone: this.deps.zone,
      supportedProtocolVersion: offered,
    });
    if (answer.ok) this.session.onRegistered(answer.body);
    return answer;
  }

  private async untilDone(): Promise<void> {
    const s = this.session;
    const backoff = new Backoff(this.settings.backoff, this.random);
    let offered = WORKER_PROTOCOL_VERSION;
    while (!s.session && !s.signal.aborted && !s.draining) {
      const call = this.attempt(offered);
      this.inFlight = call.catch(() => undefined);
      const answer = await call.finally(() => {
        this.inFlight = null;
      });
      if (answer.ok) return;
      if (answer.code === 'unsupported_protocol_version' && offered > WORKER_PROTOCOL_MIN) {
        this.deps.log.info('control plane does not speak this protocol; offering the one below', {
          workerId: this.deps.workerId,
          refused: offered,
          offering: offered - 1,
        });
        offered--;
        continue;
      }
      const reaction = controlReaction(answer.status, answer.code);
      if (reaction === 'fatal') {
        s.failFatally(
          new SessionFatalError(`the control plane refused protocol ${offered}: ${answer.message}`),
        );
        return;
      }
      const delay = s.delayFor(reaction === 'drop' ? 'retry_slowly' : reaction, answer, backoff);
      s.logRefusal('register', answer, reaction, delay);
      await sleep(delay, s.signal);
    }
  }
}
