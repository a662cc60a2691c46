// Standalone mode's SnapshotSource: a static JSON file (GATEWAY_SNAPSHOT_FILE / --snapshot), re-read on
// reload() (SIGHUP). The file is a snapshot's content, optionally without `kind` and `checksum` (computed
// when absent, verified when present), plus a `credentials` map standing in for Secret Manager.
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { parseProxyCredentials } from '../../../shared/src/domain/cloud-init/credentials.js';
import { buildSnapshot, snapshotChecksum } from '../../../shared/src/domain/gateway/canonical.js';
import {
  type GatewaySnapshot,
  GatewaySnapshotContent,
  sha256Hex,
} from '../../../shared/src/messages/gateway-snapshot.js';
import type { StaticCredentialResolver, UpstreamCredentials } from './credentials.js';
import type { Logger } from './logger.js';
import type { SnapshotSink, SnapshotSource } from './session.js';

// The same format as the Secret Manager payloads (and the VMs): one parser for every reader.
function credentialString(s: string, ctx: z.RefinementCtx): UpstreamCredentials {
  const c = parseProxyCredentials(s, 'external');
  if (c.ok) return c.credentials;
  ctx.addIssue({ code: 'custom', message: c.reason });
  return z.NEVER;
}

const Credential = z.union([
  z.string().transform(credentialString),
  z.object({ username: z.string(), password: z.string() }).strict(),
]);

export const StandaloneSnapshotFile = z
  .object({
    ...GatewaySnapshotContent.shape,
    kind: z.literal('full').optional(),
    checksum: z
      .string()
      .regex(/^[0-9a-f]{64}$/)
      .optional(),
    /** Keyed by secret id or "secret@version": test and bench credentials, never production ones. */
    credentials: z.record(z.string(), Credential).default({}),
  })
  .strict();

export class SnapshotFileError extends Error {
  readonly kind = 'snapshot_file';
}

export async function readSnapshotFile(
  path: string,
): Promise<{ snapshot: GatewaySnapshot; credentials: Record<string, UpstreamCredentials> }> {
  let json: unknown;
  try {
    json = JSON.parse(await readFile(path, 'utf8'));
  } catch (cause) {
    throw new SnapshotFileError(`cannot read snapshot file ${path}`, { cause });
  }
  const parsed = StandaloneSnapshotFile.safeParse(json);
  if (!parsed.success)
    throw new SnapshotFileError(`${path}: ${z.prettifyError(parsed.error)}`, { cause: parsed.error });
  const { credentials, checksum, kind: _kind, ...content } = parsed.data;
  if (checksum && checksum !== snapshotChecksum(content, sha256Hex)) {
    throw new SnapshotFileError(`${path}: checksum does not match the content`);
  }
  return { snapshot: buildSnapshot(content, sha256Hex), credentials };
}

export class FileSnapshotSource implements SnapshotSource {
  private sink: SnapshotSink | null = null;
  /** The credentials of the last file read, to tell a reload that changed only them. */
  private loadedCredentials = '';

  constructor(
    private readonly path: string,
    private readonly credentials: StaticCredentialResolver,
    private readonly log: Logger,
    /** The cache in front of `credentials`: a reload brings new values, which must win over cached ones. */
    private readonly cache?: { clear(): void },
  ) {}

  async start(sink: SnapshotSink): Promise<void> {
    this.sink = sink;
    const result = await this.load();
    if (!result.ok) throw new SnapshotFileError(`${this.path}: snapshot refused (${result.reason})`);
  }

  /** SIGHUP: a bad or refused file is logged and the running snapshot stays. */
  async reload(): Promise<void> {
    try {
      const before = this.loadedCredentials;
      const r = await this.load();
      if (!r.ok) this.log.warn('snapshot file refused', { path: this.path, reason: r.reason });
      else if (r.duplicate && this.loadedCredentials !== before) {
        // Same version and checksum: a duplicate, as in controller mode, so nothing is recompiled —
        // credentials are not part of the checksummed content.
        this.log.warn(
          'snapshot file credentials changed but its version did not: bump the version to apply',
          {
            path: this.path,
            version: r.version,
          },
        );
      }
    } catch (err) {
      this.log.error('snapshot file unreadable', { path: this.path, error: String(err) });
    }
  }

  private async load() {
    const { snapshot, credentials } = await readSnapshotFile(this.path);
    this.loadedCredentials = JSON.stringify(credentials);
    this.credentials.replace(credentials);
    this.cache?.clear();
    return this.sink!.applySnapshot(snapshot);
  }

  async stop(): Promise<void> {
    this.sink = null;
  }
}
