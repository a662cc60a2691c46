// The emulator's state and its JSON form (google.cloud.secretmanager.v1 Secret / SecretVersion in the proto3
// JSON mapping). Real GCP answers every name (and every notification's secretId / versionId) with the
// project NUMBER, however the caller spelled the project; the emulator does so for the projects given a
// number (`projectNumbers`), and otherwise answers with the project as the caller spelled it.
export type VersionStateName = 'ENABLED' | 'DISABLED' | 'DESTROYED';

/** `$alt=json;enum-encoding=int` (what the Node client sends) wants enums as their numbers. */
export const STATE_NUMBER: Record<VersionStateName, number> = { ENABLED: 1, DISABLED: 2, DESTROYED: 3 };

export type Replication =
  | { automatic: Record<string, never> }
  | { userManaged: { replicas: Array<{ location: string }> } };

export interface VersionState {
  number: number;
  createTime: Date;
  destroyTime: Date | undefined;
  state: VersionStateName;
  /** Cleared on destroy, as GCP discards the payload. */
  data: Buffer | undefined;
  crc32c: number;
  clientSpecifiedPayloadChecksum: boolean;
  etag: string;
}

export interface SecretState {
  /** The project ID: the key the store files the secret under. */
  project: string;
  /** The project segment of the names answered: its number when it has one (as on GCP), else `project`. */
  answeredProject?: string;
  id: string;
  createTime: Date;
  replication: Replication;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  topics: string[];
  etag: string;
  versions: VersionState[];
}

export type EnumEncoding = 'int' | 'string';

export const secretPath = (s: Pick<SecretState, 'project' | 'answeredProject' | 'id'>) =>
  `projects/${s.answeredProject ?? s.project}/secrets/${s.id}`;
export const versionPath = (s: SecretState, v: Pick<VersionState, 'number'>) =>
  `${secretPath(s)}/versions/${v.number}`;

// proto3 JSON leaves out empty maps and lists.
const nonEmpty = <T extends object>(key: string, value: T) =>
  Object.keys(value).length > 0 ? { [key]: value } : {};

export function secretJson(s: SecretState): Record<string, unknown> {
  return {
    name: secretPath(s),
    replication: s.replication,
    createTime: s.createTime.toISOString(),
    ...nonEmpty('labels', s.labels),
    ...(s.topics.length > 0 ? { topics: s.topics.map((name) => ({ name })) } : {}),
    etag: s.etag,
    ...nonEmpty('annotations', s.annotations),
  };
}

export function versionJson(s: SecretState, v: VersionState, enums: EnumEncoding): Record<string, unknown> {
  const replicationStatus =
    'automatic' in s.replication
      ? { automatic: {} }
      : {
          userManaged: { replicas: s.replication.userManaged.replicas.map(({ location }) => ({ location })) },
        };
  return {
    name: versionPath(s, v),
    createTime: v.createTime.toISOString(),
    ...(v.destroyTime ? { destroyTime: v.destroyTime.toISOString() } : {}),
    state: enums === 'int' ? STATE_NUMBER[v.state] : v.state,
    replicationStatus,
    etag: v.etag,
    ...(v.clientSpecifiedPayloadChecksum ? { clientSpecifiedPayloadChecksum: true } : {}),
  };
}
