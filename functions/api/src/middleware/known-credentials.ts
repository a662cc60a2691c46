// The credentials this API instance has accepted lately, held as SHA-256 digests (never the credential
// itself): the failed-authentication limit (auth-failure-limit.ts) lets a request carrying one through an
// address's empty bucket, because checking a credential that passed before is no guess, and the address
// may be shared — Cloud NAT, Google's egress pool — with whoever emptied it. Bounded: past `max`, the one
// accepted longest ago is dropped (it only goes back to being checked like any other). Adding one takes a
// successful authentication, so no caller can fill this with credentials of its choosing.
import { createHash } from 'node:crypto';

export const DEFAULT_MAX_KNOWN_CREDENTIALS = 10_000;

const digestOf = (credential: string) => createHash('sha256').update(credential, 'utf8').digest('base64');

export class KnownCredentials {
  /** Digests in insertion order, refreshed on each success: the first is the one accepted longest ago. */
  private readonly digests = new Set<string>();

  constructor(private readonly max = DEFAULT_MAX_KNOWN_CREDENTIALS) {}

  has(credential: string): boolean {
    return this.digests.has(digestOf(credential));
  }

  /** After the credential was accepted. */
  remember(credential: string): void {
    const d = digestOf(credential);
    this.digests.delete(d);
    this.digests.add(d);
    if (this.digests.size > this.max) this.digests.delete(this.digests.values().next().value!);
  }

  /** After it was refused (expired, rotated out, or not allowed where it was used). */
  forget(credential: string): void {
    this.digests.delete(digestOf(credential));
  }

  get size(): number {
    return this.digests.size;
  }
}
