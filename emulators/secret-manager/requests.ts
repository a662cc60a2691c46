// Request bodies as the REST surface accepts them (service.proto http annotations), validated the way
// Google's front end does: unknown fields and wrong types are INVALID_ARGUMENT, never a crash. Features the
// emulator does not model (TTL, rotation, CMEK, aliases, tags) are refused as UNIMPLEMENTED rather than ignored.
import { z } from 'zod';
import { ApiError, invalidArgument } from './api-error.js';

const LABEL_KEY = /^[a-z][a-z0-9_-]{0,62}$/;
const LABEL_VALUE = /^[a-z0-9_-]{0,63}$/;
const TOPIC = /^projects\/[^/]+\/topics\/[A-Za-z][-A-Za-z0-9._~%+]{2,254}$/;

const Labels = z
  .record(
    z.string().regex(LABEL_KEY, 'label keys are 1-63 lowercase letters, digits, "_" or "-"'),
    z.string(),
  )
  .refine((m) => Object.values(m).every((v) => LABEL_VALUE.test(v)), 'label values are 0-63 of [a-z0-9_-]')
  .refine((m) => Object.keys(m).length <= 64, 'at most 64 labels');

const Replication = z.union([
  z.strictObject({ automatic: z.strictObject({ customerManagedEncryption: z.null().optional() }) }),
  z.strictObject({
    userManaged: z.strictObject({
      replicas: z
        .array(
          z.strictObject({ location: z.string().min(1), customerManagedEncryption: z.null().optional() }),
        )
        .min(1),
    }),
  }),
]);

const emptyOrAbsent = z
  .union([
    z.null(),
    z.record(z.string(), z.unknown()).refine((m) => Object.keys(m).length === 0, 'not supported'),
  ])
  .optional();

/** google.cloud.secretmanager.v1.Secret as a create/patch body (output-only fields tolerated, as GCP does). */
export const SecretBody = z.strictObject({
  name: z.string().optional(),
  createTime: z.unknown().optional(),
  replication: Replication.optional(),
  labels: Labels.optional(),
  topics: z
    .array(
      z.strictObject({ name: z.string().regex(TOPIC, 'a topic name projects/{project}/topics/{topic}') }),
    )
    .max(10, 'a secret has at most 10 topics')
    .optional(),
  etag: z.string().optional(),
  annotations: z.record(z.string().min(1).max(63), z.string()).optional(),
  // Not modelled; accepted only when empty (the Node client always sends the maps).
  versionAliases: emptyOrAbsent,
  tags: emptyOrAbsent,
  expireTime: z.null().optional(),
  ttl: z.null().optional(),
  rotation: z.null().optional(),
  versionDestroyTtl: z.null().optional(),
  customerManagedEncryption: z.null().optional(),
  secretType: z.union([z.literal(0), z.literal('SECRET_TYPE_UNSPECIFIED')]).optional(),
  policyMember: z.unknown().optional(),
});
export type SecretBody = z.infer<typeof SecretBody>;

// proto3 JSON accepts standard and URL-safe base64, padded or not.
const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/;

export const AddVersionBody = z.strictObject({
  parent: z.string().optional(),
  payload: z.strictObject({
    data: z.string().regex(BASE64, 'Base64 decoding failed').optional(),
    // int64 travels as a JSON string in proto3 JSON; a number is accepted too.
    dataCrc32c: z.union([z.string().regex(/^\d{1,10}$/), z.number().int().nonnegative()]).optional(),
  }),
});
export type AddVersionBody = z.infer<typeof AddVersionBody>;

export const VersionActionBody = z.strictObject({ name: z.string().optional(), etag: z.string().optional() });

/** Parses `body` with `schema`, mapping failures to Google's INVALID_ARGUMENT / UNIMPLEMENTED wording. */
export function parseBody<T>(schema: z.ZodType<T>, body: unknown, root: string): T {
  const r = schema.safeParse(body ?? {});
  if (r.success) return r.data;
  const issue = r.error.issues[0]!;
  const at = [root, ...issue.path.map(String)].join('.');
  if (issue.code === 'unrecognized_keys') {
    throw invalidArgument(
      `Invalid JSON payload received. Unknown name "${issue.keys[0]}" at '${at}': Cannot find field.`,
    );
  }
  const field = String(issue.path[0] ?? '');
  if (
    [
      'expireTime',
      'ttl',
      'rotation',
      'versionDestroyTtl',
      'customerManagedEncryption',
      'versionAliases',
      'tags',
      'secretType',
    ].includes(field)
  ) {
    throw new ApiError(
      'UNIMPLEMENTED',
      `${root}.${field} is not supported by the proxyplane Secret Manager emulator.`,
    );
  }
  throw invalidArgument(`Invalid value at '${at}': ${issue.message}`);
}
