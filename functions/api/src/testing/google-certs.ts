// A stand-in for Google's ID-token signing side, for tests that must run the real verification code path
// (google-auth-library's cert fetch + RS256 check): an RSA key pair made at test time, tokens signed with
// it, and an HTTP server that publishes the public key the way https://www.googleapis.com/oauth2/v1/certs
// does ({kid: PEM}, with Cache-Control max-age).
import { createSign, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SigningKey {
  kid: string;
  privateKey: KeyObject;
  publicPem: string;
}

export function newSigningKey(kid: string): SigningKey {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { kid, privateKey, publicPem: publicKey.export({ type: 'spki', format: 'pem' }).toString() };
}

const b64url = (data: string | Buffer) => Buffer.from(data).toString('base64url');

/** A compact JWS; `header` overrides let tests forge alg / kid. */
export function signJwt(
  key: SigningKey,
  claims: Record<string, unknown>,
  header: Record<string, unknown> = {},
): string {
  const head = b64url(JSON.stringify({ alg: 'RS256', typ: 'JWT', kid: key.kid, ...header }));
  const body = b64url(JSON.stringify(claims));
  const signature = createSign('RSA-SHA256').update(`${head}.${body}`).sign(key.privateKey);
  return `${head}.${body}.${b64url(signature)}`;
}

/** Claims of a Google ID token for `email`, valid for an hour from `now` (seconds since the epoch). */
export function googleClaims(email: string, audience: string, now = Math.floor(Date.now() / 1000)) {
  return {
    iss: 'https://accounts.google.com',
    aud: audience,
    azp: audience,
    sub: `sub-${email}`,
    email,
    email_verified: true,
    iat: now,
    exp: now + 3600,
  };
}

export interface CertsServer {
  url: string;
  /** How many times the certs were fetched. */
  fetches(): number;
  close(): Promise<void>;
}

export function startCertsServer(keys: SigningKey[], host = '127.0.0.1'): Promise<CertsServer> {
  let fetches = 0;
  const body = JSON.stringify(Object.fromEntries(keys.map((k) => [k.kid, k.publicPem])));
  const server = createServer((_req, res) => {
    fetches++;
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'public, max-age=300' });
    res.end(body);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => {
      const { port } = server.address() as AddressInfo;
      resolve({
        url: `http://${host}:${port}/oauth2/v1/certs`,
        fetches: () => fetches,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            server.closeAllConnections();
          }),
      });
    });
  });
}
