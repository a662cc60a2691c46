// ProxyResource ⇄ Firestore document `proxies/{name}`. The document must read well in the console
// (brief: "flat, named fields, timestamps as Firestore Timestamps, no opaque blobs"): `spec` and
// `status` are maps, dates are Timestamps, and an absent optional field is stored as `null` so that the
// console shows every field a proxy can have. Reading strips those nulls again and lets zod fill the
// defaults, so a document written by an older version still parses.

import type { DocumentData } from '@google-cloud/firestore';
import { Timestamp } from '@google-cloud/firestore';
import { ZodError } from 'zod';
import { type Condition, ProxyResource, type ProxySpec, type ProxyStatus } from '../../domain/proxy.js';
import { parseWithoutUnknownSpecFields } from '../../domain/unknown-spec-fields.js';

const ts = (d: Date): Timestamp => Timestamp.fromDate(d);
const tsOrNull = (d: Date | null): Timestamp | null => (d ? Timestamp.fromDate(d) : null);

/** undefined → null, recursively: Firestore rejects undefined, and null reads as "absent" in the console. */
function nullForUndefined(value: unknown): unknown {
  if (value === undefined) return null;
  if (Array.isArray(value)) return value.map(nullForUndefined);
  if (value && typeof value === 'object' && !(value instanceof Timestamp) && !(value instanceof Date)) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, nullForUndefined(v)]));
  }
  return value;
}

/** null → key removed, recursively: the spec schema has optional fields, never nullable ones. */
function withoutNulls(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutNulls);
  if (value && typeof value === 'object' && !(value instanceof Timestamp)) {
    return Object.fromEntries(
      Object.entries(value)
        .filter(([, v]) => v !== null)
        .map(([k, v]) => [k, withoutNulls(v)]),
    );
  }
  return value;
}

export function specToFirestore(spec: ProxySpec): DocumentData {
  const explicit: Record<string, unknown> = {
    ...spec,
    credentialsRef: spec.credentialsRef ?? null,
    healthCheck: { ...spec.healthCheck, url: spec.healthCheck.url ?? null },
  };
  if (spec.mode === 'managed') explicit.cloudInit = spec.cloudInit ?? null;
  return nullForUndefined(explicit) as DocumentData;
}

const conditionToFirestore = (c: Condition): DocumentData => ({
  type: c.type,
  status: c.status,
  reason: c.reason,
  message: c.message,
  lastTransitionTime: ts(c.lastTransitionTime),
  observedGeneration: c.observedGeneration,
});

export function statusToFirestore(s: ProxyStatus): DocumentData {
  return {
    phase: s.phase,
    observedGeneration: s.observedGeneration,
    providerId: s.providerId,
    ip: s.ip,
    conditions: s.conditions.map(conditionToFirestore),
    specHash: s.specHash,
    latencyMillis: s.latencyMillis,
    lastHealthCheckTime: tsOrNull(s.lastHealthCheckTime),
    nextReconcileAt: tsOrNull(s.nextReconcileAt),
    // Absent when there are none: Firestore refuses undefined, and older documents have no such field.
    ...(s.unreachableRoutes?.length ? { unreachableRoutes: s.unreachableRoutes } : {}),
    ...(s.servedCredentials ? { servedCredentials: { ...s.servedCredentials } } : {}),
  };
}

export function proxyToFirestore(p: ProxyResource): DocumentData {
  return {
    name: p.name,
    uid: p.uid,
    generation: p.generation,
    createdAt: ts(p.createdAt),
    deletionRequestedAt: tsOrNull(p.deletionRequestedAt),
    spec: specToFirestore(p.spec),
    status: statusToFirestore(p.status),
  };
}

const toDate = (v: unknown): unknown => (v instanceof Timestamp ? v.toDate() : v);

function statusFromFirestore(raw: unknown): unknown {
  if (!raw || typeof raw !== 'object') return raw;
  const s = raw as Record<string, unknown>;
  const conditions = Array.isArray(s.conditions) ? s.conditions : [];
  return {
    ...s,
    conditions: conditions.map((c) =>
      c && typeof c === 'object'
        ? { ...c, lastTransitionTime: toDate((c as Record<string, unknown>).lastTransitionTime) }
        : c,
    ),
    lastHealthCheckTime: toDate(s.lastHealthCheckTime ?? null),
    nextReconcileAt: toDate(s.nextReconcileAt ?? null),
  };
}

/**
 * A stored spec may carry a field a newer release added (every release writes its defaulted fields into
 * each spec): during a rolling upgrade, or after a rollback, this release reads such a document without
 * it instead of refusing the whole proxy (reconcile dropping its requests, the snapshot draining it, the
 * API answering 500). Only unknown spec fields are read away; any other problem still does not fit.
 */
function parseStored(input: Record<string, unknown>): ProxyResource {
  const parsed = parseWithoutUnknownSpecFields(ProxyResource, input);
  if (parsed.success) return parsed.data;
  throw parsed.error;
}

/**
 * Parses a stored document, `proxies/{id}`; throws the zod error when the document does not fit the model
 * — or names another proxy than its id (copied under another id by hand: it is not the proxy it says).
 * Spec fields this release does not know are read away (parseStored).
 */
export function proxyFromFirestore(data: DocumentData, id: string): ProxyResource {
  const proxy = parseStored({
    name: data.name,
    uid: data.uid,
    generation: data.generation,
    createdAt: toDate(data.createdAt),
    deletionRequestedAt: toDate(data.deletionRequestedAt ?? null),
    spec: withoutNulls(data.spec),
    status: statusFromFirestore(data.status),
  });
  if (proxy.name === id) return proxy;
  throw new ZodError([
    {
      code: 'custom',
      path: ['name'],
      message: `names another proxy than its document id ${id}`,
      input: data.name,
    },
  ]);
}

/** updateTime ⇄ the port's opaque version string ("<seconds>.<nanoseconds>", exact to the nanosecond). */
export const versionOf = (t: Timestamp): string => `${t.seconds}.${String(t.nanoseconds).padStart(9, '0')}`;

export function timestampOfVersion(version: string): Timestamp | null {
  const m = /^(\d+)\.(\d{9})$/.exec(version);
  return m ? new Timestamp(Number(m[1]), Number(m[2])) : null;
}
