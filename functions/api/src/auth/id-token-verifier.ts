// The port over "is this a Google-signed identity token for one of our audiences?", and its real adapter
// on google-auth-library. OAuth2Client.verifyIdToken is two steps — fetch Google's signing certs (cached
// per Cache-Control), then verifySignedJwtWithCertsAsync — and we call the two steps ourselves so that a
// failure to fetch the certs (503, retry) is told apart from a bad token (401) without reading messages.
// The library's error messages embed the whole token, so they are dropped here and never logged.
import { OAuth2Client } from 'google-auth-library';

export interface IdTokenClaims {
  email?: string;
  emailVerified: boolean;
  audience: string;
  subject: string;
}

export type IdTokenVerification =
  | { ok: true; claims: IdTokenClaims }
  | { ok: false; kind: 'invalid' | 'unavailable'; cause?: unknown };

export interface IdTokenVerifier {
  verify(idToken: string): Promise<IdTokenVerification>;
}

/** The audience of `gcloud auth print-identity-token` for a user account: the gcloud CLI's OAuth client id. */
export const GCLOUD_CLI_AUDIENCE = '32555940559.apps.googleusercontent.com';

/** Google's ID-token issuers (https://developers.google.com/identity/openid-connect/openid-connect#validatinganidtoken). */
const GOOGLE_ISSUERS = ['accounts.google.com', 'https://accounts.google.com'];

export interface GoogleIdTokenVerifierOptions {
  /** Accepted `aud` values: the service URL, and GCLOUD_CLI_AUDIENCE when user tokens from gcloud are wanted. */
  audiences: string[];
  /** Where the PEM certs are fetched; Google's by default. Tests point it at a local server. */
  certsUrl?: string;
  timeoutMs?: number;
}

export class GoogleIdTokenVerifier implements IdTokenVerifier {
  private readonly client: OAuth2Client;
  private readonly audiences: string[];

  constructor({ audiences, certsUrl, timeoutMs = 5000 }: GoogleIdTokenVerifierOptions) {
    if (audiences.length === 0) throw new Error('GoogleIdTokenVerifier needs at least one audience');
    this.audiences = [...audiences];
    this.client = new OAuth2Client({
      issuers: GOOGLE_ISSUERS,
      transporterOptions: { timeout: timeoutMs },
      ...(certsUrl ? { endpoints: { oauth2FederatedSignonPemCertsUrl: certsUrl } } : {}),
    });
  }

  async verify(idToken: string): Promise<IdTokenVerification> {
    let certs: Awaited<ReturnType<OAuth2Client['getFederatedSignonCertsAsync']>>['certs'];
    try {
      certs = (await this.client.getFederatedSignonCertsAsync()).certs;
    } catch (cause) {
      return { ok: false, kind: 'unavailable', cause: errorKind(cause) };
    }
    try {
      const ticket = await this.client.verifySignedJwtWithCertsAsync(
        idToken,
        certs,
        this.audiences,
        GOOGLE_ISSUERS,
      );
      const payload = ticket.getPayload();
      if (!payload || typeof payload.aud !== 'string') return { ok: false, kind: 'invalid' };
      return {
        ok: true,
        claims: {
          email: typeof payload.email === 'string' ? payload.email : undefined,
          emailVerified: payload.email_verified === true,
          audience: payload.aud,
          subject: payload.sub,
        },
      };
    } catch {
      return { ok: false, kind: 'invalid' };
    }
  }
}

/** What may be logged about a certs-fetch failure: its HTTP status or error code, never its message. */
function errorKind(err: unknown): string {
  const e = err as { status?: number; code?: string; response?: { status?: number } };
  return String(e?.response?.status ?? e?.status ?? e?.code ?? 'error');
}
