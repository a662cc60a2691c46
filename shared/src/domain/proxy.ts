// The Proxy model: one zod schema for the admin API, the Firestore converter and the messages.
// Port of the operator seed's Proxy CRD (.spec / .status), flattened into a document that reads well in
// the Firestore console: named fields, no opaque blobs; timestamps are Dates here and Timestamps in Firestore.
import { z } from 'zod';
import { ConnectPorts } from './cloud-init/squid-conf.js';

/** RFC 1123 DNS label: the document ID and the source of the instance name. */
export const ProxyName = z
  .string()
  .min(1)
  .max(63)
  .regex(
    /^[a-z]([-a-z0-9]*[a-z0-9])?$/,
    'must be a DNS label: lowercase letters, digits and "-", starting with a letter',
  );

/** A Secret Manager reference. Values never live in Firestore: only this pointer does. */
export const SecretRef = z
  .object({
    secret: z
      .string()
      .min(1)
      .max(255)
      .regex(/^[A-Za-z0-9_-]+$/, 'a Secret Manager secret id'),
    version: z
      .string()
      .regex(/^(latest|[1-9][0-9]{0,9})$/, '"latest" or a version number')
      .default('latest'),
  })
  .strict();
export type SecretRef = z.infer<typeof SecretRef>;

/**
 * How a crawler, the gateway and the probe talk to the proxy: `http` (absolute-form requests and CONNECT)
 * or `socks5` (RFC 1928 CONNECT, RFC 1929 username/password when the proxy has credentials). Crawler
 * teams bring residential proxies that are often SOCKS5-only; managed proxies run an HTTP proxy on their
 * VM, so for them the admin API accepts `http` only (managed-protocol.ts).
 */
export const ProxyProtocol = z.enum(['http', 'socks5']);
export type ProxyProtocol = z.infer<typeof ProxyProtocol>;

/** Also what a route's selector may name (the API checks it there: a key no proxy can carry never matches). */
export const AttributeKey = z
  .string()
  .min(1)
  .max(63)
  .regex(/^[a-zA-Z0-9]([-_.a-zA-Z0-9]*[a-zA-Z0-9])?$/, 'attribute keys are 1-63 of [-_.a-zA-Z0-9]');
export const Attributes = z
  .record(AttributeKey, z.string().max(256))
  .refine((m) => Object.keys(m).length <= 32, 'at most 32 attributes')
  .default({});

export const HealthCheckSpec = z
  .object({
    /** Probed through the proxy: http → absolute-URI GET; https → CONNECT + TLS inside the tunnel. */
    url: z
      .string()
      .max(2048)
      .url()
      .refine((u) => /^https?:\/\//.test(u), 'http or https URL')
      .optional(),
    expectedStatus: z.number().int().min(100).max(599).default(200),
    intervalSeconds: z.number().int().min(1).max(3600).default(30),
    timeoutSeconds: z.number().int().min(1).max(60).default(5),
    successThreshold: z.number().int().min(1).max(10).default(1),
    failureThreshold: z.number().int().min(1).max(10).default(3),
    /**
     * Where the EGRESS tier expects the proxy's traffic to leave from: `proxy` (absent: the default) its
     * own address, `status.ip`; `any` another one — a residential or rotating gateway exits elsewhere by
     * design — as long as it is not the prober's own (then the proxy is not proxying).
     */
    exitIp: z.enum(['proxy', 'any']).optional(),
  })
  .strict();
export type HealthCheckSpec = z.infer<typeof HealthCheckSpec>;

export const CloudInit = z.union([
  z.object({ inline: z.string().max(32 * 1024) }).strict(),
  z.object({ secretRef: SecretRef }).strict(),
]);
export type CloudInit = z.infer<typeof CloudInit>;

const common = {
  attributes: Attributes,
  /** Concurrent leases this proxy can carry. */
  capacity: z.number().int().min(1).max(1000).default(4),
  credentialsRef: SecretRef.optional(),
  healthCheck: HealthCheckSpec.default(() => HealthCheckSpec.parse({})),
  /** In the gateway pool, the proxy is owned by a gateway worker rather than leased directly. */
  gatewayPool: z.boolean().default(false),
  /**
   * Cordoned (docs/leases.md § Cordon): kept provisioned, probed and listed, but given no new work — no
   * new lease, no renewal, no place in a gateway worker's snapshot. Not part of the spec hash: cordoning
   * never replaces a VM.
   */
  cordoned: z.boolean().default(false).meta({
    description:
      'Cordoned: the proxy stays provisioned, probed and listed, but gets no new lease, its leases are not renewed (409 `proxy_cordoned`) and the gateway workers stop sending it new requests; what runs finishes. `false` uncordons it.',
  }),
};

export const ManagedSpec = z
  .object({
    mode: z.literal('managed'),
    provider: z.string().min(1).max(32).default('gce'),
    zone: z
      .string()
      .regex(/^[a-z]+-[a-z]+[0-9]+-[a-z]$/, 'a GCE zone such as us-central1-a')
      .max(63),
    machineType: z
      .string()
      .regex(/^[a-z0-9][-a-z0-9]*$/)
      .max(63)
      .default('e2-small'),
    image: z.string().min(1).max(512).default('projects/debian-cloud/global/images/family/debian-12'),
    cloudInit: CloudInit.optional(),
    port: z.number().int().min(1).max(65535).default(3128).meta({
      description:
        "The VM's proxy port. 22 is sshd's: refused (400 `invalid_request`, issue `port_reserved`) unless `cloudInit` is the proxy's own.",
    }),
    protocol: ProxyProtocol.default('http').meta({
      description: 'Only `http`: the VM runs an HTTP proxy. Anything else is 400 `protocol_unsupported`.',
    }),
    connectPorts: ConnectPorts.optional().meta({
      description:
        'The ports the default cloud-init lets CONNECT reach (squid `acl SSL_ports`) besides 443, which it always ' +
        'allows (the probe tunnels to the API there); absent: 443 only. ' +
        'A port below 1025 other than 80 and 443 is 400 (issue `connect_port_unsafe`: squid `Safe_ports` ' +
        'refuses it anyway). Ignored with `cloudInit`: your own script decides.',
    }),
    ...common,
  })
  .strict();
export type ManagedSpec = z.infer<typeof ManagedSpec>;

export const Endpoint = z
  .object({
    host: z.string().min(1).max(253),
    port: z.number().int().min(1).max(65535),
    protocol: ProxyProtocol.default('http').meta({
      description: 'What the endpoint speaks: an HTTP proxy (CONNECT, absolute-form) or SOCKS5.',
    }),
  })
  .strict();
export type Endpoint = z.infer<typeof Endpoint>;

export const ExternalSpec = z
  .object({
    mode: z.literal('external'),
    endpoint: Endpoint,
    ...common,
  })
  .strict();
export type ExternalSpec = z.infer<typeof ExternalSpec>;

export const ProxySpec = z.discriminatedUnion('mode', [ManagedSpec, ExternalSpec]);
export type ProxySpec = z.infer<typeof ProxySpec>;

export const ConditionStatus = z.enum(['True', 'False', 'Unknown']);
export const Condition = z.object({
  type: z.string(),
  status: ConditionStatus,
  reason: z.string(),
  message: z.string(),
  lastTransitionTime: z.date(),
  observedGeneration: z.number().int(),
});
export type Condition = z.infer<typeof Condition>;

/** Condition types on a Proxy's status (seed §3, §6). Reconcile writes both; the probe only feeds Healthy. */
export const ConditionType = { Provisioned: 'Provisioned', Healthy: 'Healthy' } as const;

/** Reasons of the Provisioned condition: one per arm of the seed's §3 / §4 diagrams. */
export const ProvisionedReason = {
  Provisioning: 'Provisioning',
  Created: 'Created',
  Replacing: 'Replacing',
  /** Provisioned=True: the spec hash is stale, but no replacement slot is free; the old instance serves. */
  ReplacementQueued: 'ReplacementQueued',
  Deleting: 'Deleting',
  /**
   * Provisioned=False while a proxy is being deleted: the provider refused the delete for now because the
   * instance is still being created (Provider.delete 'not-ready'); asked again every DeletionPoll, less
   * often as the creation goes on (reconcile/delete-not-ready.ts).
   */
  DeletionWaitingForCreation: 'DeletionWaitingForCreation',
  ExternalEndpoint: 'ExternalEndpoint',
  QuotaExceeded: 'QuotaExceeded',
  CloudInitError: 'CloudInitError',
  /** Latched: no provider call until the spec changes (generation moves past the condition's). */
  PermanentError: 'PermanentError',
} as const;

export const Phase = z.enum([
  'Pending',
  'Provisioning',
  'Provisioned',
  'Ready',
  'Unhealthy',
  'Deleting',
  'Failed',
]);
export type Phase = z.infer<typeof Phase>;

export const ProxyStatus = z.object({
  phase: Phase,
  observedGeneration: z.number().int(),
  providerId: z.string().nullable(),
  ip: z.string().nullable(),
  conditions: z.array(Condition),
  /** Hash of the spec (and resolved cloud-init) the current instance was built from; "" before adoption. */
  specHash: z.string(),
  latencyMillis: z.number().nullable(),
  lastHealthCheckTime: z.date().nullable(),
  nextReconcileAt: z.date().nullable(),
  /**
   * The routes (target groups) whose target check keeps failing through this proxy (contract §6 TARGET
   * tier, docs/health.md): the snapshots leave the proxy out of those routes only. Sorted; absent = none.
   */
  unreachableRoutes: z.array(z.string()).optional(),
  /**
   * The credentials version the running instance was built with (managed, default cloud-init; reconcile
   * writes it from the instance's metadata): what leases, the probe and the snapshots hand out, so an
   * instance still waiting for its turn after a rotation keeps serving (served-credentials.ts). Absent: the
   * spec's reference.
   */
  servedCredentials: z.object({ secret: z.string(), version: z.string() }).optional(),
});
export type ProxyStatus = z.infer<typeof ProxyStatus>;

export const emptyStatus = (): ProxyStatus => ({
  phase: 'Pending',
  observedGeneration: 0,
  providerId: null,
  ip: null,
  conditions: [],
  specHash: '',
  latencyMillis: null,
  lastHealthCheckTime: null,
  nextReconcileAt: null,
});

export const ProxyResource = z.object({
  name: ProxyName,
  uid: z.string().uuid(),
  generation: z.number().int().min(1),
  createdAt: z.date(),
  deletionRequestedAt: z.date().nullable(),
  spec: ProxySpec,
  status: ProxyStatus,
});
export type ProxyResource = z.infer<typeof ProxyResource>;

/**
 * Cordoned: given no new work (leases, renewals, gateway snapshots) while it stays provisioned and probed.
 * Absent in a document or a spec from before the field: not cordoned.
 */
export const isCordoned = (proxy: Pick<ProxyResource, 'spec'>): boolean => proxy.spec.cordoned === true;

/** What a client speaks to the proxy: a managed one runs an HTTP proxy (spec.protocol); an external one says. */
export const proxyProtocol = (proxy: Pick<ProxyResource, 'spec'>): ProxyProtocol =>
  proxy.spec.mode === 'external' ? proxy.spec.endpoint.protocol : proxy.spec.protocol;
