// `proxies create -f FILE` and `proxies apply -f FILE`: a YAML or JSON file (or "-" for stdin) holding one
// `{name, spec}`, a list of them, or several YAML documents. Every proxy is checked against the API's own
// schemas (the domain's zod ProxyName / ProxySpec) before anything is sent, so a bad file creates (or
// changes) nothing and says where it is wrong. A spec field those schemas do not know is the exception:
// it is sent as written, for the API to judge (see readDocument).
//
// What `proxies get`, `list`, `create` and `apply` print (-o yaml or -o json) is such a file too, as
// `kubectl get -o yaml | edit | kubectl apply -f` is: the plane's own fields beside `name` and `spec` are
// dropped here, before anything is sent, because the API refuses a body that sets them (on purpose: it
// stays strict). The one thing kept of them is what the proxy was when the file was saved (`uid`,
// `generation`), so that `apply` does not write an edit of an old copy over a newer change (apply.ts).
// Any other field beside `name` and `spec` is still refused: it would be dropped, never sent, so a typo
// there would go unseen.

import { parseAllDocuments } from 'yaml';
import { z } from 'zod';
import { RESERVED_PORT_MESSAGE, reservedManagedPort } from '../shared/src/domain/cloud-init/proxy-port.js';
import { ENDPOINT_HOST_RULE, quotableHost, refusedEndpointHost } from '../shared/src/domain/endpoint-host.js';
import { refusedHealthCheckUrl } from '../shared/src/domain/health-check-url.js';
import { lacksBootSource } from '../shared/src/domain/managed-boot.js';
import { unsupportedManagedProtocol } from '../shared/src/domain/managed-protocol.js';
import { MANAGED_PROVIDERS, unsupportedManagedProvider } from '../shared/src/domain/managed-provider.js';
import { ProxyName, ProxySpec } from '../shared/src/domain/proxy.js';
import { parseWithoutUnknownSpecFields } from '../shared/src/domain/unknown-spec-fields.js';
import type { Io } from './context.js';
import { InputError } from './errors.js';
import { assertInputSize, documentValue, issueLines, readInput } from './input-file.js';

/**
 * One proxy of a file: the body of `POST /v1/proxies`, or the resource as the API prints it. Of the
 * plane's fields (set by the plane; a body may not set them), `uid` and `generation` are read — the proxy
 * the file was saved from — and the rest are dropped whatever they hold: `createdAt`,
 * `deletionRequestedAt`, `status`, and the listing's `healthy`, `leasable`, `activeLeases`,
 * `leaseStateInvalid`.
 */
const ProxyDocument = z
  .object({
    name: ProxyName,
    spec: ProxySpec,
    uid: z.string().min(1, 'the uid `proxies get` printed, or leave it out').optional(),
    generation: z
      .number('the generation `proxies get` printed (a whole number), or leave it out')
      .int('the generation `proxies get` printed (a whole number), or leave it out')
      .min(1, 'the generation `proxies get` printed (1 or more), or leave it out')
      .optional(),
    createdAt: z.unknown().optional(),
    deletionRequestedAt: z.unknown().optional(),
    status: z.unknown().optional(),
    healthy: z.unknown().optional(),
    leasable: z.unknown().optional(),
    activeLeases: z.unknown().optional(),
    leaseStateInvalid: z.unknown().optional(),
  })
  .strict();

/**
 * `value` read as a ProxyDocument, with the spec fields this release's schema does not know left out of
 * what is read — not of what is sent (the body is the file's spec as written). A file a newer API printed
 * (`proxies get X -o yaml`) carries the fields that release added: refused here as unknown, it could not
 * be applied at all by an older CLI. The API checks the spec whole and refuses a real typo with a 400
 * naming it; every field this CLI knows is still checked here, before anything is sent.
 */
const readDocument = (value: unknown) => parseWithoutUnknownSpecFields(ProxyDocument, value);

/**
 * `proxies list -o yaml|json`: `{proxies: [...], count}`, `skipped` when some documents were left out, and
 * `redacted` when a crawler token listed them (fields left out of every spec).
 */
const LISTING_FIELDS = ['proxies', 'count', 'skipped', 'redacted'];

const isListing = (v: unknown): v is { proxies: unknown[]; redacted?: unknown } =>
  v !== null &&
  typeof v === 'object' &&
  !Array.isArray(v) &&
  Array.isArray((v as { proxies?: unknown }).proxies) &&
  Object.keys(v).every((k) => LISTING_FIELDS.includes(k));

/** What a file saved from the API's output says of the proxy it was saved from (absent: nothing). */
export interface SavedFrom {
  uid?: string;
  generation?: number;
}

export interface ProxyToCreate {
  name: string;
  /**
   * `{name, spec}` as written in the file (the plane's fields dropped): the API applies defaults, so what
   * is stored is what the API says.
   */
  body: { name: string; spec: unknown };
  /** The proxy the file was saved from, when it says (apply's precondition); create ignores it. */
  savedFrom: SavedFrom;
  /** Where it is in the file ("fleet.yaml document 2"), for messages. */
  where: string;
  /** The spec as the domain schema reads it (defaults applied). */
  spec: ProxySpec;
}

export interface ProxyFileOptions {
  /** Ends the bad-file message: "nothing was created" by default. */
  nothing?: string;
  /**
   * false: leave specProblems to the caller, who can pass each proxy's stored spec (`proxies apply`: the
   * API does not refuse an edit for what the stored spec already has). Default true.
   */
  specChecks?: boolean;
}

/**
 * The API's own refusals of a spec (proxy-admin.ts) that the CLI can tell before sending it. With
 * `current`, the proxy's stored spec, the API's leniency too: what the stored spec already has (a host, port
 * 22 or a missing credentialsRef from before those checks) is no reason to refuse.
 */
export function specProblems(where: string, spec: ProxySpec, current?: ProxySpec): string[] {
  const problems: string[] = [];
  // The API's port_reserved: the default cloud-init cannot put squid on sshd's port (proxy-port.ts).
  if (reservedManagedPort(spec, current) !== null) {
    problems.push(
      `${where}: spec.port: ${RESERVED_PORT_MESSAGE}, so the default cloud-init cannot run the proxy there; use another port (3128 by default), or a spec.cloudInit of your own`,
    );
  }
  const host = refusedEndpointHost(spec, current);
  // Quoted without what could be a password: "user:pw@host" or "host:port:user:pw" must not put one on stderr.
  if (host !== null)
    problems.push(`${where}: spec.endpoint.host: not ${ENDPOINT_HOST_RULE}: ${quotableHost(host)}`);
  if (refusedHealthCheckUrl(spec, current)) {
    problems.push(`${where}: spec.healthCheck.url: must not carry credentials (user:password@)`);
  }
  const provider = unsupportedManagedProvider(spec, current);
  if (provider !== null) {
    problems.push(
      `${where}: spec.provider: a managed proxy's provider must be ${MANAGED_PROVIDERS.join(' or ')}, not ${provider} (no adapter for it in this plane)`,
    );
  }
  const protocol = unsupportedManagedProtocol(spec);
  if (protocol !== null) {
    problems.push(
      `${where}: spec.protocol: a managed proxy speaks http only, not ${protocol} (use an external proxy for ${protocol})`,
    );
  }
  if (lacksBootSource(spec, current)) {
    problems.push(`${where}: spec.credentialsRef: required for a managed proxy without spec.cloudInit`);
  }
  return problems;
}

/**
 * Reads `-f FILE` (`-` for stdin) and parses it. A missing, unreadable or directory path is the caller's
 * input (exit 2, nothing sent), not a bug.
 */
export async function readProxyFile(
  io: Pick<Io, 'readFile' | 'readStdin'>,
  file: string,
  options: ProxyFileOptions = {},
): Promise<ProxyToCreate[]> {
  const { text, source } = await readInput(io, file);
  return parseProxyFile(text, source, options);
}

export function parseProxyFile(
  text: string,
  source: string,
  { nothing = 'nothing was created', specChecks = true }: ProxyFileOptions = {},
): ProxyToCreate[] {
  assertInputSize(text, source);
  const docs = parseAllDocuments(text, { uniqueKeys: true });
  const list = Array.isArray(docs) ? docs : [docs];
  const items: Array<{ where: string; value: unknown }> = [];
  for (const [d, doc] of list.entries()) {
    const where = list.length > 1 ? `${source} document ${d + 1}` : source;
    const value = documentValue(doc, where);
    if (value === null || value === undefined) continue;
    if (isListing(value) && value.redacted !== undefined) {
      // Applied, its specs without their own cloud-init would replace each such proxy's VM with the
      // default one: a crawler's listing is a view, not a copy (docs/api.md § Discovery).
      const fields = Array.isArray(value.redacted) ? value.redacted.join(', ') : String(value.redacted);
      throw new InputError(
        `${where} is a listing made with a crawler token, which leaves out ${fields}: list the proxies with an admin token to save a copy that can be applied`,
      );
    }
    const listed = isListing(value) ? value.proxies : value;
    const what = listed === value ? 'item' : 'proxies item';
    if (!Array.isArray(listed)) items.push({ where, value });
    else for (const [i, v] of listed.entries()) items.push({ where: `${where} ${what} ${i + 1}`, value: v });
  }
  if (items.length === 0) throw new InputError(`${source} holds no proxy`);

  const problems: string[] = [];
  const out: ProxyToCreate[] = [];
  const seen = new Set<string>();
  for (const { where, value } of items) {
    const parsed = readDocument(value);
    if (!parsed.success) {
      problems.push(...issueLines(parsed.error).map((line) => `${where}: ${line}`));
      continue;
    }
    // The API's own refusals that need nothing but the spec (proxy-admin.ts): caught here, so the file's
    // other proxies are not created before the API refuses this one.
    const spec = parsed.data.spec;
    if (specChecks) problems.push(...specProblems(where, spec));
    if (seen.has(parsed.data.name)) problems.push(`${where}: name "${parsed.data.name}" appears twice`);
    seen.add(parsed.data.name);
    const { name, uid, generation } = parsed.data;
    const body = { name, spec: (value as { spec: unknown }).spec };
    const savedFrom = {
      ...(uid === undefined ? {} : { uid }),
      ...(generation === undefined ? {} : { generation }),
    };
    out.push({ name, body, savedFrom, where, spec });
  }
  if (problems.length > 0) {
    throw new InputError(`${source} is not a valid proxy definition; ${nothing}`, problems);
  }
  return out;
}
