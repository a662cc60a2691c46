// Decoding a `proxies` document for the catalog. TODO(reconcile): replace with the shared proxy converter
// (shared/src/adapters/firestore/proxy-converter.ts) once it lands on main; until then this mirrors the
// documented shape (ProxyResource with Timestamps in place of Dates).
import { type DocumentData, Timestamp } from '@google-cloud/firestore';
import { ProxyResource } from '../../domain/proxy.js';

export function decodeProxyDocument(id: string, data: DocumentData): ProxyResource | null {
  const parsed = ProxyResource.safeParse({ name: id, ...(toDates(data) as object) });
  return parsed.success && parsed.data.name === id ? parsed.data : null;
}

function toDates(value: unknown): unknown {
  if (value instanceof Timestamp) return value.toDate();
  if (Array.isArray(value)) return value.map(toDates);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, toDates(v)]));
  }
  return value;
}
