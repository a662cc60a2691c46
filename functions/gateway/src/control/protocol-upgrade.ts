// A session granted below this worker's highest protocol version — the control plane did not speak it at
// registration, e.g. the gateway was deployed before the API — would otherwise stay at the lower version
// for the life of the process: runtime reports keep a session alive, and re-registering with the same
// version resumes it. So while below, every `protocolUpgradeRetryMs` the worker offers its highest version
// again and, refused, each one down to just above the current one, as registration steps down (at most
// highest − current calls): an API that moved from 3 to 4, not 5, is reached at 4 — offering only the
// highest, a worker at 3 stayed there for good. Once the control plane speaks one, the answer is a new
// session at that version (the API supersedes a live session registered with another version,
// shared/src/domain/workers/session.ts), which the worker takes as it takes any new session: report
// sequences from the start, the applied snapshot ACKed again (the API keeps the same live process's ACK
// bound, so its share does not drain meanwhile); and the snapshot pass a new
// session triggers writes what the higher version reads (protocol 2: `filtersDestinations`, without which plain HTTP to a managed proxy
// goes as a CONNECT to port 80 that the managed squid refuses; protocol 3: `excludedRoutes`, without which
// a proxy a route's target check fails through stays in that route; protocol 4: SOCKS5 proxies, which a
// worker below it is never assigned; protocol 5: `suspect`, without which a proxy that has started
// failing is picked like a sound one).
import { WORKER_PROTOCOL_VERSION } from './registration.js';
import type { ControllerSession } from './session.js';
import type { SessionDeps, SessionSettings } from './session-settings.js';

export class ProtocolUpgrade {
  private timer: NodeJS.Timeout | null = null;
  /** The offer awaiting its answer (and the session it grants taken), if any; never rejects. */
  inFlight: Promise<unknown> | null = null;

  constructor(
    private readonly session: ControllerSession,
    private readonly deps: SessionDeps,
    private readonly settings: SessionSettings,
    private readonly onError: (err: unknown) => void,
  ) {
    session.signal.addEventListener('abort', () => this.cancel(), { once: true });
  }

  /** After every granted session: below our highest version, offer it again later. */
  granted(version: number): void {
    this.cancel();
    if (version >= WORKER_PROTOCOL_VERSION || this.session.signal.aborted) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      const run = this.attempt(version).catch((err) => {
        this.onError(err);
        this.retryLater(version);
      });
      this.inFlight = run;
      void run.finally(() => {
        if (this.inFlight === run) this.inFlight = null;
      });
    }, this.settings.protocolUpgradeRetryMs);
    this.timer.unref?.();
  }

  cancel(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /** From our highest down to just above `version`, one register call each: the first one spoken is taken. */
  private async attempt(version: number): Promise<void> {
    for (let offered = WORKER_PROTOCOL_VERSION; offered > version; offered--) {
      const outcome = await this.offer(version, offered);
      if (outcome !== 'unspoken') return;
    }
    // None above the current one spoken yet: the current session carries on; try again later.
    this.retryLater(version);
  }

  /** One offer: `unspoken` when the API refused that version (the next one down is worth a try). */
  private async offer(version: number, offered: number): Promise<'done' | 'unspoken'> {
    const s = this.session;
    const current = s.session;
    // Lost meanwhile: the registration loop offers the highest version first anyway.
    if (!current || s.draining || s.signal.aborted) return 'done';
    const answer = await this.deps.client.register({
      workerId: this.deps.workerId,
      instanceId: this.deps.instanceId,
      zone: this.deps.zone,
      supportedProtocolVersion: offered,
    });
    // Registered again in the meantime (a lost session): that registration scheduled its own upgrade. Were
    // ours the API's latest session after all, the other one's next call is refused as stale and the
    // registration loop resumes ours (same instance, same version).
    if (s.session !== current || s.signal.aborted) return 'done';
    // Taken even once shutdown began: the API has already superseded the old session, and the draining
    // reports must go on the one it knows (the registration loop does not run while draining).
    if (answer.ok) {
      this.deps.log.info('control plane speaks a higher protocol now: session replaced', {
        workerId: this.deps.workerId,
        from: version,
        to: answer.body.protocolVersion,
        sessionId: answer.body.sessionId,
      });
      s.onRegistered(answer.body);
      return 'done';
    }
    if (s.draining) return 'done';
    if (answer.code === 'unsupported_protocol_version') return 'unspoken';
    // The call failed: the current session carries on; the whole offer again later.
    s.logRefusal('register', answer, 'retry', this.settings.protocolUpgradeRetryMs);
    this.retryLater(version);
    return 'done';
  }

  private retryLater(version: number): void {
    if (this.session.session && !this.session.draining) this.granted(version);
  }
}
