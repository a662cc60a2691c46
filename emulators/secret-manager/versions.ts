// Secret versions: add, resolve (`latest` or N), access, list, and the ENABLED / DISABLED / DESTROYED
// state machine. `latest` is the most recently CREATED version whatever its state, as on GCP: when it
// is disabled, access fails FAILED_PRECONDITION rather than falling back to an older version
// (google-github-actions/get-secretmanager-secrets#268 shows the real answer).
import { crc32c } from '../../shared/src/adapters/secret-manager/crc32c.js';
import { failedPrecondition, invalidArgument, notFound } from './api-error.js';
import { type EventType, versionEvent } from './events.js';
import { type SecretState, type VersionState, versionPath } from './model.js';
import { type Page, paginate } from './paging.js';
import type { Mutation, SecretStore } from './store.js';

export const MAX_PAYLOAD_BYTES = 64 * 1024;

export function addVersion(
  store: SecretStore,
  project: string,
  id: string,
  data: Buffer,
  givenCrc: number | undefined,
): Mutation<{ secret: SecretState; version: VersionState }> {
  const secret = store.getSecret(project, id);
  // Real Secret Manager refuses an empty payload (proto3 JSON cannot tell `data: ""` from no data) with
  // 400 INVALID_ARGUMENT, worded as below; a version must hold at least one byte.
  if (data.length === 0) throw invalidArgument('Field [payload] is required.');
  if (data.length > MAX_PAYLOAD_BYTES) {
    throw invalidArgument(`Secret payload data must be no larger than 64KiB (got ${data.length} bytes).`);
  }
  const crc = crc32c(data);
  if (givenCrc !== undefined && givenCrc !== crc) {
    throw invalidArgument(
      'Checksum mismatch: payload.data_crc32c does not match the CRC32C of payload.data.',
    );
  }
  const version = store.newVersion(secret, data, crc, givenCrc !== undefined);
  return {
    result: { secret, version },
    notifications: [versionEvent('SECRET_VERSION_ADD', secret, version, version.createTime)],
  };
}

/** Finds `latest` or a version number; GCP's NOT_FOUND wording differs between the two. */
export function resolveVersion(
  store: SecretStore,
  project: string,
  id: string,
  versionId: string,
): { secret: SecretState; version: VersionState } {
  const name = `projects/${project}/secrets/${id}`;
  if (versionId === 'latest') {
    const secret = store.findSecret(project, id);
    const version = secret?.versions.at(-1);
    if (!secret || !version) throw notFound(`Secret [${name}] not found or has no versions.`);
    return { secret, version };
  }
  if (!/^[A-Za-z0-9_-]{1,63}$/.test(versionId))
    throw invalidArgument(`Invalid secret version ID: ${versionId}`);
  const secret = store.findSecret(project, id);
  const version = /^[1-9]\d{0,9}$/.test(versionId) ? secret?.versions[Number(versionId) - 1] : undefined;
  if (!secret || !version) throw notFound(`Secret Version [${name}/versions/${versionId}] not found.`);
  return { secret, version };
}

export function accessVersion(
  store: SecretStore,
  project: string,
  id: string,
  versionId: string,
): { name: string; payload: { data: string; dataCrc32c: string } } {
  const { secret, version } = resolveVersion(store, project, id, versionId);
  if (version.state !== 'ENABLED' || !version.data) {
    throw failedPrecondition(
      `Secret Version [${versionPath(secret, version)}] is in ${version.state} state.`,
    );
  }
  return {
    name: versionPath(secret, version),
    payload: { data: version.data.toString('base64'), dataCrc32c: String(version.crc32c) },
  };
}

/** Newest first, as `gcloud secrets versions list` shows them. */
export function listVersions(
  store: SecretStore,
  project: string,
  id: string,
  pageSize: number,
  pageToken: string | null,
): { secret: SecretState; page: Page<VersionState> } {
  const secret = store.getSecret(project, id);
  const newestFirst = [...secret.versions].reverse();
  const page = paginate(
    newestFirst,
    (v) => String(v.number),
    (k, cursor) => Number(k) < Number(cursor),
    pageSize,
    pageToken,
  );
  return { secret, page };
}

export type VersionAction = 'enable' | 'disable' | 'destroy';

const EVENT: Record<VersionAction, EventType> = {
  enable: 'SECRET_VERSION_ENABLE',
  disable: 'SECRET_VERSION_DISABLE',
  destroy: 'SECRET_VERSION_DESTROY',
};

export function changeVersionState(
  store: SecretStore,
  project: string,
  id: string,
  versionId: string,
  action: VersionAction,
  etag: string | undefined,
): Mutation<{ secret: SecretState; version: VersionState }> {
  const { secret, version } = resolveVersion(store, project, id, versionId);
  store.checkEtag(etag, version.etag, `Secret Version [${versionPath(secret, version)}]`);
  // DESTROYED is terminal: the payload is gone.
  if (version.state === 'DESTROYED') {
    throw failedPrecondition(`Secret Version [${versionPath(secret, version)}] is in DESTROYED state.`);
  }
  const now = store.clock.now();
  if (action === 'enable') version.state = 'ENABLED';
  if (action === 'disable') version.state = 'DISABLED';
  if (action === 'destroy') {
    version.state = 'DESTROYED';
    version.data = undefined;
    version.destroyTime = now;
  }
  version.etag = store.etag();
  return {
    result: { secret, version },
    notifications: [versionEvent(EVENT[action], secret, version, now)],
  };
}
