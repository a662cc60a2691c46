// The worker's credential on control-plane calls (docs/gateway-control-plane.md § Authentication): a
// worker token locally (WORKER_TOKENS on the API side), on GCP a Google identity token of the gateway's
// service account for the API's URL, from the metadata server. google-auth-library's IdTokenClient caches
// the token until shortly before it expires; invalidate() (after a 401) forces a fresh one.
import { GoogleAuth, type IdTokenClient } from 'google-auth-library';

export interface TokenSource {
  /** The Authorization header value, or undefined to send none (a local API with worker auth off). */
  header(): Promise<string | undefined>;
  invalidate(): void;
}

export const staticToken = (token: string): TokenSource => ({
  header: async () => `Bearer ${token}`,
  invalidate: () => {},
});

export const noToken: TokenSource = { header: async () => undefined, invalidate: () => {} };

export class GoogleIdTokenSource implements TokenSource {
  private client: Promise<IdTokenClient> | null = null;
  private settled = false;

  constructor(
    private readonly audience: string,
    private readonly auth: Pick<GoogleAuth, 'getIdTokenClient'> = new GoogleAuth(),
  ) {}

  async header(): Promise<string | undefined> {
    if (!this.client) {
      const client = this.auth.getIdTokenClient(this.audience);
      this.client = client;
      this.settled = false;
      void client.then(
        () => {
          if (this.client === client) this.settled = true;
        },
        () => {},
      );
    }
    let client: IdTokenClient;
    try {
      client = await this.client;
    } catch (err) {
      this.client = null;
      throw err;
    }
    const headers = await client.getRequestHeaders(this.audience);
    return headers.get('authorization') ?? undefined;
  }

  /**
   * After a 401, or a call that timed out waiting for the token: the next call gets a fresh one. A
   * client still being made (the metadata server has not answered) is given up, not waited on again.
   */
  invalidate(): void {
    if (!this.settled) {
      this.client = null;
      return;
    }
    void this.client?.then(
      (c) => {
        c.credentials = {};
      },
      () => {},
    );
  }
}
