// A self-signed certificate for localhost and 127.0.0.1, made with the openssl command line (Node can
// parse X.509 but not issue it). The demo target's HTTPS port keeps one under the plane's state directory
// so that a crawler can trust it with --cacert across restarts; tests make throwaway ones.
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

export interface CertificateFiles {
  key: string;
  cert: string;
  /** The certificate's path: what a client passes as its CA (`curl --cacert`). */
  certPath: string;
}

const DAY_MS = 86_400_000;

/**
 * Writes a new key and certificate (EC P-256) into `dir`, valid for `days`, for `altNames` (openssl's
 * form) under the subject `commonName` (a client falls back to it for a name when no DNS name is listed).
 */
export async function makeSelfSignedCert(
  dir: string,
  days: number,
  altNames = 'DNS:localhost,IP:127.0.0.1',
  commonName = 'localhost',
): Promise<CertificateFiles> {
  await mkdir(dir, { recursive: true });
  const keyPath = join(dir, 'key.pem');
  const certPath = join(dir, 'cert.pem');
  await promisify(execFile)('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-subj',
    `/CN=${commonName}`,
    '-addext',
    `subjectAltName=${altNames}`,
    '-days',
    String(days),
    '-keyout',
    keyPath,
    '-out',
    certPath,
  ]);
  return { key: await readFile(keyPath, 'utf8'), cert: await readFile(certPath, 'utf8'), certPath };
}

/**
 * The certificate already in `dir` while it stays valid for another day, else a new one. Null when
 * openssl is not installed: the caller goes on without HTTPS.
 */
export async function demoCertificate(dir: string, now: Date): Promise<CertificateFiles | null> {
  const certPath = join(dir, 'cert.pem');
  try {
    const [key, cert] = await Promise.all([
      readFile(join(dir, 'key.pem'), 'utf8'),
      readFile(certPath, 'utf8'),
    ]);
    if (Date.parse(new X509Certificate(cert).validTo) - now.getTime() > DAY_MS)
      return { key, cert, certPath };
  } catch {
    // absent or unreadable: make a new one
  }
  try {
    return await makeSelfSignedCert(dir, 365);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}
