// The proxy listener's per-source share of the connections not yet admitted (no request head taken in:
// nothing sent, half a head, or one refused). Those need no credentials to open and are held up to the
// header timeout (or the linger after a refusal), so one source address could fill the listener's
// GATEWAY_MAX_CONNECTIONS with them and lock every other client out. A source holding `perSource` of them
// has any further connection closed at accept, counted in `refused` (gateway_preauth_refusals_total).
//
// A connection's source costs a getpeername(2) and its strings, and a served request is one connection:
// so a source is read only once `perSource` connections are waiting in all — below that, no source can be
// at its share — and then for every waiting connection not read yet, each read at most once. In the
// common case (heads arriving as the connections open) accepting one costs a Set insertion and its
// admission a deletion, nothing else.
import type { Socket } from 'node:net';

const sourceOf = (s: Socket): string => s.remoteAddress ?? '';

export class PreAuthGate {
  /** Waiting connections whose source was not read: accepted while fewer than `perSource` waited in all. */
  private readonly unread = new Set<Socket>();
  /** Waiting connections whose source was read, and that source. */
  private readonly read = new Map<Socket, string>();
  /** Waiting connections by source: those of `read` (`unread` is emptied before it is consulted). */
  private readonly bySource = new Map<string, number>();
  /** Connections closed at accept. */
  refused = 0;

  constructor(readonly perSource: number) {}

  /** Connections waiting: accepted, neither admitted nor closed. */
  get waiting(): number {
    return this.unread.size + this.read.size;
  }

  /** At accept: false when `socket`'s source holds its share already (the caller closes it). */
  admit(socket: Socket): boolean {
    if (this.waiting < this.perSource) {
      this.unread.add(socket);
      return true;
    }
    for (const s of this.unread) this.track(s, sourceOf(s));
    this.unread.clear();
    const source = sourceOf(socket);
    if ((this.bySource.get(source) ?? 0) >= this.perSource) {
      this.refused++;
      return false;
    }
    this.track(socket, source);
    return true;
  }

  /** Its request admitted, or closed: the connection no longer counts (a second call does nothing). */
  release(socket: Socket): void {
    if (this.unread.delete(socket)) return;
    const source = this.read.get(socket);
    if (source === undefined) return;
    this.read.delete(socket);
    const n = this.bySource.get(source)! - 1;
    if (n === 0) this.bySource.delete(source);
    else this.bySource.set(source, n);
  }

  private track(socket: Socket, source: string): void {
    this.read.set(socket, source);
    this.bySource.set(source, (this.bySource.get(source) ?? 0) + 1);
  }
}
