// What the local gateway trusts beyond the system's CAs: the demo site's self-signed certificate, so that
// `POST /v1/fetch` of the HTTPS demo site verifies it as a deployed gateway verifies a real site (never by
// turning verification off), plus the developer's own NODE_EXTRA_CA_CERTS, if any. Node reads that
// variable once, at start, and takes one file: when both exist, they go into one bundle under the plane's
// state directory.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** The NODE_EXTRA_CA_CERTS to start the gateway with, or nothing to leave the developer's as it is. */
export async function gatewayExtraCaEnv(opts: {
  /** The demo site's certificate, when the demo runs and openssl could make one. */
  demoCertPath: string | undefined;
  env: NodeJS.ProcessEnv;
  /** Where the bundle is written when one is needed. */
  dir: string;
}): Promise<Record<string, string>> {
  if (!opts.demoCertPath) return {};
  const own = opts.env.NODE_EXTRA_CA_CERTS;
  if (!own) return { NODE_EXTRA_CA_CERTS: opts.demoCertPath };
  let ownPem: string;
  try {
    ownPem = await readFile(own, 'utf8');
  } catch {
    // Node would only warn about an unreadable file and go on without it: so does the bundle.
    return { NODE_EXTRA_CA_CERTS: opts.demoCertPath };
  }
  const bundle = join(opts.dir, 'extra-ca.pem');
  await mkdir(opts.dir, { recursive: true });
  const demoPem = await readFile(opts.demoCertPath, 'utf8');
  await writeFile(bundle, `${ownPem.trimEnd()}\n${demoPem.trimEnd()}\n`);
  return { NODE_EXTRA_CA_CERTS: bundle };
}
