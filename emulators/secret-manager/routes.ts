// The REST subset of google.cloud.secretmanager.v1.SecretManagerService that the plane uses, with the
// paths and verbs of the http annotations in the client's protos/google/cloud/secretmanager/v1/service.proto.
// Each route names the IAM permission it needs, so a denial injected through the admin API answers
// PERMISSION_DENIED before existence is checked, as IAM does.
import { ApiError, invalidArgument } from './api-error.js';
import type { Controls, Permission } from './controls.js';
import type { Notification } from './events.js';
import { type EnumEncoding, secretJson, versionJson } from './model.js';
import { parsePageSize } from './paging.js';
import { AddVersionBody, parseBody, SecretBody, VersionActionBody } from './requests.js';
import type { SecretStore } from './store.js';
import { accessVersion, addVersion, changeVersionState, listVersions, resolveVersion } from './versions.js';

export interface RouteContext {
  project: string;
  secret: string;
  version: string;
  query: URLSearchParams;
  body: unknown;
  enums: EnumEncoding;
  store: SecretStore;
}

export interface RouteResult {
  body: unknown;
  notifications?: Notification[];
}

interface Route {
  method: string;
  pattern: RegExp;
  permission?: Permission;
  run(ctx: RouteContext): RouteResult;
}

const P = '/v1/projects/([^/:]+)';
const S = `${P}/secrets/([^/:]+)`;
const V = `${S}/versions/([^/:]+)`;

const versionAction =
  (action: 'enable' | 'disable' | 'destroy') =>
  (c: RouteContext): RouteResult => {
    const { etag } = parseBody(VersionActionBody, c.body, 'request');
    const m = changeVersionState(c.store, c.project, c.secret, c.version, action, etag);
    return { body: versionJson(m.result.secret, m.result.version, c.enums), notifications: m.notifications };
  };

const ROUTES: Route[] = [
  {
    method: 'GET',
    pattern: new RegExp(`^${P}/secrets$`),
    run: (c) => {
      if (c.query.get('filter'))
        throw new ApiError('UNIMPLEMENTED', 'filter is not supported by the emulator.');
      const page = c.store.listSecrets(
        c.project,
        parsePageSize(c.query.get('pageSize')),
        c.query.get('pageToken'),
      );
      return {
        body: {
          ...(page.items.length > 0 ? { secrets: page.items.map(secretJson) } : {}),
          ...(page.nextPageToken ? { nextPageToken: page.nextPageToken } : {}),
          totalSize: page.totalSize,
        },
      };
    },
  },
  {
    method: 'POST',
    pattern: new RegExp(`^${P}/secrets$`),
    permission: 'secretmanager.secrets.create',
    run: (c) => {
      if (!c.secret) throw invalidArgument('secret_id is required.');
      const m = c.store.createSecret(c.project, c.secret, parseBody(SecretBody, c.body, 'secret'));
      return { body: secretJson(m.result), notifications: m.notifications };
    },
  },
  {
    method: 'GET',
    pattern: new RegExp(`^${S}$`),
    permission: 'secretmanager.secrets.get',
    run: (c) => ({ body: secretJson(c.store.getSecret(c.project, c.secret)) }),
  },
  {
    method: 'PATCH',
    pattern: new RegExp(`^${S}$`),
    permission: 'secretmanager.secrets.update',
    run: (c) => {
      const mask = (c.query.get('updateMask') ?? '').split(',').filter(Boolean);
      const m = c.store.updateSecret(c.project, c.secret, parseBody(SecretBody, c.body, 'secret'), mask);
      return { body: secretJson(m.result), notifications: m.notifications };
    },
  },
  {
    method: 'DELETE',
    pattern: new RegExp(`^${S}$`),
    permission: 'secretmanager.secrets.delete',
    run: (c) => {
      const m = c.store.deleteSecret(c.project, c.secret, c.query.get('etag') ?? undefined);
      return { body: {}, notifications: m.notifications };
    },
  },
  {
    method: 'POST',
    pattern: new RegExp(`^${S}:addVersion$`),
    permission: 'secretmanager.versions.add',
    run: (c) => {
      const { payload } = parseBody(AddVersionBody, c.body, 'request');
      const data = Buffer.from(payload.data ?? '', 'base64');
      const crc = payload.dataCrc32c === undefined ? undefined : Number(payload.dataCrc32c);
      const m = addVersion(c.store, c.project, c.secret, data, crc);
      return {
        body: versionJson(m.result.secret, m.result.version, c.enums),
        notifications: m.notifications,
      };
    },
  },
  {
    method: 'GET',
    pattern: new RegExp(`^${S}/versions$`),
    permission: 'secretmanager.versions.list',
    run: (c) => {
      if (c.query.get('filter'))
        throw new ApiError('UNIMPLEMENTED', 'filter is not supported by the emulator.');
      const size = parsePageSize(c.query.get('pageSize'));
      const { secret, page } = listVersions(c.store, c.project, c.secret, size, c.query.get('pageToken'));
      return {
        body: {
          ...(page.items.length > 0
            ? { versions: page.items.map((v) => versionJson(secret, v, c.enums)) }
            : {}),
          ...(page.nextPageToken ? { nextPageToken: page.nextPageToken } : {}),
          totalSize: page.totalSize,
        },
      };
    },
  },
  {
    method: 'GET',
    pattern: new RegExp(`^${V}$`),
    permission: 'secretmanager.versions.get',
    run: (c) => {
      const { secret, version } = resolveVersion(c.store, c.project, c.secret, c.version);
      return { body: versionJson(secret, version, c.enums) };
    },
  },
  {
    method: 'GET',
    pattern: new RegExp(`^${V}:access$`),
    permission: 'secretmanager.versions.access',
    run: (c) => ({ body: accessVersion(c.store, c.project, c.secret, c.version) }),
  },
  {
    method: 'POST',
    pattern: new RegExp(`^${V}:enable$`),
    permission: 'secretmanager.versions.enable',
    run: versionAction('enable'),
  },
  {
    method: 'POST',
    pattern: new RegExp(`^${V}:disable$`),
    permission: 'secretmanager.versions.disable',
    run: versionAction('disable'),
  },
  {
    method: 'POST',
    pattern: new RegExp(`^${V}:destroy$`),
    permission: 'secretmanager.versions.destroy',
    run: versionAction('destroy'),
  },
];

/**
 * Runs the route for `method path`: injected faults first, then the IAM denial, then the handler.
 * Throws ApiError (UNIMPLEMENTED for any other /v1 path).
 */
export function dispatch(
  method: string,
  path: string,
  ctx: Omit<RouteContext, 'project' | 'secret' | 'version'>,
  controls: Controls,
): RouteResult {
  for (const route of ROUTES) {
    const m = route.pattern.exec(path);
    if (!m) continue;
    if (route.method !== method) continue;
    const project = m[1]!;
    // Create names the secret in ?secretId=, every other route in the path.
    const secret = m[2] ?? ctx.query.get('secretId') ?? '';
    const version = m[3] ?? '';
    controls.takeFault(project, secret || undefined);
    if (route.permission) {
      const resource = [
        `projects/${project}`,
        secret && `secrets/${secret}`,
        version && `versions/${version}`,
      ]
        .filter(Boolean)
        .join('/');
      controls.authorize(project, secret, route.permission, resource, () =>
        Boolean(ctx.store.findSecret(project, secret)),
      );
    }
    return route.run({ ...ctx, project, secret, version });
  }
  const known = ROUTES.some((r) => r.pattern.test(path));
  throw known
    ? new ApiError('NOT_FOUND', `Method ${method} is not allowed on ${path}.`)
    : new ApiError(
        'UNIMPLEMENTED',
        `${method} ${path} is not implemented by the proxyplane Secret Manager emulator.`,
      );
}
