// In-memory Secret Manager: secrets and their versions per project. Every mutation returns the
// notifications it causes; the server publishes them (Get, List and Access cause none, as on GCP).
import type { Clock } from '../../shared/src/ports/clock.js';
import { alreadyExists, failedPrecondition, invalidArgument, notFound } from './api-error.js';
import { type Notification, secretEvent, topicConfigured } from './events.js';
import type { SecretState, VersionState } from './model.js';
import { type Page, paginate } from './paging.js';
import type { SecretBody } from './requests.js';

const SECRET_ID = /^[A-Za-z0-9_-]{1,255}$/;
const UPDATABLE = ['labels', 'topics', 'annotations'] as const;

export interface Mutation<T> {
  result: T;
  notifications: Notification[];
}

export class SecretStore {
  private readonly projects = new Map<string, Map<string, SecretState>>();
  private seq = 0;

  constructor(
    readonly clock: Clock,
    /** The project segment of the names a project's secrets answer with (its number, on GCP). */
    private readonly answeredProject: (project: string) => string = (project) => project,
  ) {}

  /** A fresh etag; AIP-154 etags include the quotes. Every modification, even a no-op, renews it. */
  etag(): string {
    this.seq += 1;
    return `"${this.clock.now().getTime().toString(16)}${this.seq.toString(16).padStart(6, '0')}"`;
  }

  createSecret(project: string, id: string, body: SecretBody): Mutation<SecretState> {
    if (!SECRET_ID.test(id)) {
      throw invalidArgument(
        'Secret ID must be at most 255 characters, and contain only letters, numbers, hyphens and underscores.',
      );
    }
    if (!body.replication) throw invalidArgument('Secret.replication is required.');
    const secrets = this.projectSecrets(project);
    if (secrets.has(id)) throw alreadyExists(`Secret [projects/${project}/secrets/${id}] already exists.`);
    const now = this.clock.now();
    const secret: SecretState = {
      project,
      answeredProject: this.answeredProject(project),
      id,
      createTime: now,
      replication: body.replication as SecretState['replication'],
      labels: body.labels ?? {},
      annotations: body.annotations ?? {},
      topics: (body.topics ?? []).map((t) => t.name),
      etag: this.etag(),
      versions: [],
    };
    secrets.set(id, secret);
    const notifications = secret.topics.length > 0 ? [topicConfigured(secret)] : [];
    return { result: secret, notifications: [...notifications, secretEvent('SECRET_CREATE', secret, now)] };
  }

  getSecret(project: string, id: string): SecretState {
    const secret = this.projects.get(project)?.get(id);
    if (!secret) throw notFound(`Secret [projects/${project}/secrets/${id}] not found.`);
    return secret;
  }

  /** For version reads: GCP's message when the secret is missing says "or has no versions". */
  findSecret(project: string, id: string): SecretState | undefined {
    return this.projects.get(project)?.get(id);
  }

  listSecrets(project: string, pageSize: number, pageToken: string | null): Page<SecretState> {
    const all = [...(this.projects.get(project)?.values() ?? [])].sort((a, b) => (a.id < b.id ? -1 : 1));
    return paginate(
      all,
      (s) => s.id,
      (k, cursor) => k > cursor,
      pageSize,
      pageToken,
    );
  }

  updateSecret(project: string, id: string, body: SecretBody, updateMask: string[]): Mutation<SecretState> {
    if (updateMask.length === 0) throw invalidArgument('update_mask is required.');
    const unsupported = updateMask.filter((f) => !(UPDATABLE as readonly string[]).includes(f));
    if (unsupported.length > 0) {
      throw invalidArgument(`update_mask paths not updatable here: ${unsupported.join(', ')}`);
    }
    const secret = this.getSecret(project, id);
    this.checkEtag(body.etag, secret.etag, `Secret [projects/${project}/secrets/${id}]`);
    if (updateMask.includes('labels')) secret.labels = body.labels ?? {};
    if (updateMask.includes('annotations')) secret.annotations = body.annotations ?? {};
    if (updateMask.includes('topics')) secret.topics = (body.topics ?? []).map((t) => t.name);
    secret.etag = this.etag();
    const notifications =
      updateMask.includes('topics') && secret.topics.length > 0 ? [topicConfigured(secret)] : [];
    return {
      result: secret,
      notifications: [...notifications, secretEvent('SECRET_UPDATE', secret, this.clock.now())],
    };
  }

  deleteSecret(project: string, id: string, etag: string | undefined): Mutation<undefined> {
    const secret = this.getSecret(project, id);
    this.checkEtag(etag, secret.etag, `Secret [projects/${project}/secrets/${id}]`);
    this.projects.get(project)?.delete(id);
    return { result: undefined, notifications: [secretEvent('SECRET_DELETE', secret, this.clock.now())] };
  }

  /** https://cloud.google.com/secret-manager/docs/etags: a stale etag is FAILED_PRECONDITION (HTTP 400). */
  checkEtag(given: string | undefined, current: string, what: string): void {
    if (given !== undefined && given !== '' && given !== current) {
      throw failedPrecondition(`The etag ${given} does not match the current etag of ${what}.`);
    }
  }

  reset(project?: string): void {
    if (project === undefined) this.projects.clear();
    else this.projects.delete(project);
  }

  newVersion(secret: SecretState, data: Buffer, crc: number, clientChecksum: boolean): VersionState {
    const version: VersionState = {
      number: secret.versions.length + 1,
      createTime: this.clock.now(),
      destroyTime: undefined,
      state: 'ENABLED',
      data,
      crc32c: crc,
      clientSpecifiedPayloadChecksum: clientChecksum,
      etag: this.etag(),
    };
    secret.versions.push(version);
    return version;
  }

  private projectSecrets(project: string): Map<string, SecretState> {
    let secrets = this.projects.get(project);
    if (!secrets) {
      secrets = new Map();
      this.projects.set(project, secrets);
    }
    return secrets;
  }
}
