// The Compute client's proto definitions cut down to the two services the gce provider calls.
//
// Each @google-cloud/compute client reads the package's protos.json — every message of v1, v1beta and
// v1small, 11.7 MB — and builds a protobuf.js root from all of it as it is constructed: ~1.5 s of CPU on
// an idle core (3–4 s on a loaded one) at every cold start of the reconcile and gc functions, for two
// services whose requests and responses reach 7 % of those messages. The root is built from the object
// `require` cached for that file, so pruning that object before the first client is made is all it
// takes: the clients then build their root (google-gax caches it by content) from the services they serve
// and what those reach. Pruning is in place and idempotent; an upgrade that adds a type the closure
// cannot resolve fails here, loudly, and in compute-protos.unit.test.ts, not with a client that cannot
// encode a request.
import { createRequire } from 'node:module';

const PROTOS = '@google-cloud/compute/build/protos/protos.json';
const V1 = 'google.cloud.compute.v1';
/** The services makeGceProvider constructs clients for. */
export const GCE_SERVICES = ['Instances', 'ZoneOperations'] as const;

const SCALARS = new Set([
  'double',
  'float',
  'int32',
  'int64',
  'uint32',
  'uint64',
  'sint32',
  'sint64',
  'fixed32',
  'fixed64',
  'sfixed32',
  'sfixed64',
  'bool',
  'string',
  'bytes',
]);

interface ProtoNode {
  nested?: Record<string, ProtoNode>;
  fields?: Record<string, { type: string }>;
  methods?: Record<string, { requestType: string; responseType: string }>;
  [other: string]: unknown;
}

/**
 * The names in the v1 namespace that `services` reach: the services, their methods' request and response
 * messages, and every message or enum their fields name, transitively. Types outside v1 (google.protobuf)
 * are left to the caller, which keeps every other namespace whole.
 */
export function reachableV1Names(v1: Record<string, ProtoNode>, services: readonly string[]): Set<string> {
  const seen = new Set<string>();
  const queue = [...services];
  const resolve = (name: string, scopes: Array<Record<string, ProtoNode> | undefined>, from: string) => {
    if (SCALARS.has(name)) return;
    const bare = name.startsWith('.') ? name.slice(1) : name;
    if (bare.startsWith(`${V1}.`)) return void queue.push(bare.slice(V1.length + 1));
    if (bare.includes('.')) return; // another package's (google.protobuf.Any): kept whole by the caller
    // Innermost scope first: a message's own nested types, then its parents', then v1 itself.
    const owner = scopes.find((scope) => scope?.[bare]);
    if (owner === v1) return void queue.push(bare);
    if (owner) return; // nested in a message that is kept whole
    throw new Error(`compute protos: ${from} names ${name}, which is not in ${V1}`);
  };
  const visit = (node: ProtoNode, path: string, scopes: Array<Record<string, ProtoNode> | undefined>) => {
    for (const [method, m] of Object.entries(node.methods ?? {})) {
      resolve(m.requestType, scopes, `${path}.${method}`);
      resolve(m.responseType, scopes, `${path}.${method}`);
    }
    const inner = [node.nested, ...scopes];
    for (const [field, f] of Object.entries(node.fields ?? {})) resolve(f.type, inner, `${path}.${field}`);
    for (const [name, n] of Object.entries(node.nested ?? {})) visit(n, `${path}.${name}`, inner);
  };
  while (queue.length > 0) {
    const name = queue.pop() as string;
    if (seen.has(name)) continue;
    const node = v1[name];
    if (!node) throw new Error(`compute protos: ${name} is not in ${V1}`);
    seen.add(name);
    visit(node, name, [v1]);
  }
  return seen;
}

const pruned = new WeakSet<object>();

/**
 * Prunes `json` (a protos.json as the package ships it) in place to v1's `services` and what they
 * reach; every namespace outside google.cloud.compute is kept whole. Returns it.
 */
export function pruneComputeProtos<T extends ProtoNode>(
  json: T,
  services: readonly string[] = GCE_SERVICES,
): T {
  if (pruned.has(json)) return json;
  const compute = json.nested?.google?.nested?.cloud?.nested?.compute;
  const v1 = compute?.nested?.v1;
  if (!compute?.nested || !v1?.nested) throw new Error(`compute protos: no ${V1} namespace`);
  const keep = reachableV1Names(v1.nested, services);
  v1.nested = Object.fromEntries(Object.entries(v1.nested).filter(([name]) => keep.has(name)));
  compute.nested = { v1 };
  pruned.add(json);
  return json;
}

/** Prunes the protos.json every Compute client of this process reads; call before making one. */
export function pruneInstalledComputeProtos(): void {
  pruneComputeProtos(createRequire(import.meta.url)(PROTOS) as ProtoNode);
}
