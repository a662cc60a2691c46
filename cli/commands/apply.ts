// proxyplane proxies apply -f FILE | patch NAME -p JSON | reconcile NAME — changing a fleet, as `kubectl
// apply`/`patch` would: the file's spec becomes the stored spec (PUT …/spec), a merge patch changes a few
// fields (PATCH …/spec), and a reconcile can be asked for by hand (POST …/reconcile).
//
// "Unchanged" is the API's own verdict, not the CLI's: the API compares the next spec with the stored one
// after its defaults (sameSpec in functions/api/src/admin/spec-changes.ts), writes nothing when they are
// equal and keeps `generation`, and bumps `generation` by one when it writes. So apply reads the proxy
// (its generation), sends the spec, and compares the generation it gets back: equal → unchanged (nothing
// was written), higher → configured. No copy of the API's defaults lives here to drift from a deployed
// API of another version.
//
// The PUT carries `If-Match: "<generation read>"` (docs/api.md "Conditional requests"): the API writes
// only if the proxy is still at that generation, so nobody's change made between apply's read and its
// PUT is overwritten unseen or counted as apply's. On 412 precondition_failed apply reads the proxy again
// and sends the spec again, APPLY_ATTEMPTS times at most, then fails with that code.
//
// A file saved from the API's output (`proxies get NAME -o yaml`, edited) also says which proxy it was
// saved from and at which generation (saved-from.ts): apply then writes only over that proxy at that
// generation — refused before anything is written when the stored one differs, and the PUT's If-Match is
// the file's generation, so a change made after the file was saved is never undone by applying it — a
// deletion included: a saved proxy that no longer exists is not created again (`proxies create -f` does).
// Unless the stored spec is the file's, as the API returns it (the file applied already, its answer lost):
// nothing of anyone's to undo, so it is PUT over the stored generation, and converges `unchanged`.

import { etagOf, proxyTag } from '../../functions/api/src/admin/if-match.js';
import { findDuplicateKey } from '../../shared/src/domain/duplicate-keys.js';
import type { ProxySpec } from '../../shared/src/domain/proxy.js';
import { none, outputOf } from '../args.js';
import type { Ctx } from '../context.js';
import { ApiCallError, InputError, PartialError, routeMissing, UsageError } from '../errors.js';
import { json, yaml } from '../output.js';
import { type ProxyToCreate, readProxyFile, specProblems } from '../proxy-file.js';
import { staleFileError, staleness } from '../saved-from.js';
import { type ProxyJson, proxyNameArg } from './proxies.js';

/** The proxy resource with what apply and patch compare. */
export type StoredProxy = ProxyJson & { uid?: string; generation: number };

export type ApplyOutcome = 'created' | 'configured' | 'unchanged';

export const applyOptions = { file: { type: 'string', short: 'f' } } as const;
export const patchOptions = { patch: { type: 'string', short: 'p' } } as const;

const enc = encodeURIComponent;

/**
 * The proxy's ETag as the API spells it (docs/api.md § Conditional requests): its generation and its uid,
 * so a proxy deleted and created again under the name meanwhile is never written over.
 */
const ifMatchOf = (p: StoredProxy): string =>
  etagOf(proxyTag({ generation: p.generation, uid: p.uid ?? '' }));

/** The API bumps `generation` exactly when it writes a new spec: the same generation means no write. */
export function changeOf(before: { generation: number }, after: { generation: number }): boolean {
  return after.generation !== before.generation;
}

const isNotFound = (err: unknown) =>
  err instanceof ApiCallError && err.status === 404 && err.code === 'not_found';
const isPreconditionFailed = (err: unknown) =>
  err instanceof ApiCallError && err.status === 412 && err.code === 'precondition_failed';

// A proxy's own 404, not the API's catch-all for a route it lacks.
const isProxyGone = (err: unknown) =>
  isNotFound(err) && !routeMissing('not_found', (err as ApiCallError).body);

/** Reads and writes of one proxy before apply gives up on it (others keep changing it, or creating it). */
export const APPLY_ATTEMPTS = 5;

async function getIfExists({ api }: Ctx, name: string): Promise<StoredProxy | null> {
  try {
    return await api.call<StoredProxy>('GET', `/v1/proxies/${enc(name)}`, { role: 'admin' });
  } catch (err) {
    if (isNotFound(err)) return null;
    throw err;
  }
}

/**
 * One proxy of the file, `before` being what a GET found (null: absent): create it when absent, else PUT
 * its spec and let the API say whether that changed it.
 */
export async function applyOne(
  ctx: Ctx,
  p: ProxyToCreate,
  before: StoredProxy | null,
): Promise<{ outcome: ApplyOutcome; proxy: StoredProxy }> {
  const { api } = ctx;
  const spec = p.body.spec;
  let current = before;
  // A write answered 503 and retried into 409 already_exists (a POST) or 412 (a PUT) may have landed all
  // the same: the re-read then finds this command's own change, and the PUT after it writes nothing.
  let mayHaveLanded: Landed = null;
  // A proxy created by someone else between our read and our POST is changed instead; one changed between
  // our read and our PUT is read again, one deleted is created again. Each write is against the latest
  // read, so the outcome compares the generation the write was conditioned on. A file saved from the
  // API's output is written only over the proxy and generation it was saved from: one that another writer
  // changed (a 412, then the read again) or deleted is refused, not written over nor created again.
  for (let attempt = 1; ; attempt++) {
    const last = attempt >= APPLY_ATTEMPTS;
    const stale = staleness(p.name, p.savedFrom, current, p.body.spec);
    if (stale !== null) {
      const landed =
        mayHaveLanded &&
        `proxy/${p.name}: this apply's first attempt (answered 503) may have been applied before that change`;
      throw staleFileError(p.where, landed ? [stale, landed] : [stale], 'not applied');
    }
    if (current === null) {
      try {
        const proxy = await api.call<StoredProxy>('POST', '/v1/proxies', { role: 'admin', body: p.body });
        return { outcome: 'created', proxy };
      } catch (err) {
        if (last || !(err instanceof ApiCallError) || err.code !== 'already_exists') throw err;
        if (err.retried) mayHaveLanded = 'created';
        current = await getIfExists(ctx, p.name);
        continue;
      }
    }
    try {
      const proxy = await api.call<StoredProxy>('PUT', `/v1/proxies/${enc(p.name)}/spec`, {
        role: 'admin',
        body: spec,
        headers: { 'if-match': ifMatchOf(current) },
      });
      return { outcome: applyOutcome(before, current, proxy, mayHaveLanded), proxy };
    } catch (err) {
      // Gone since our read (its deletion completed): created again, as after a 412 and a read that
      // finds nothing. Not the API's catch-all 404 (a route it lacks): that is no missing proxy.
      if (!last && isProxyGone(err)) {
        current = null;
        continue;
      }
      if (last || !isPreconditionFailed(err)) throw err;
      if ((err as ApiCallError).retried) mayHaveLanded ??= 'written';
      current = await getIfExists(ctx, p.name);
    }
  }
}

/** Which write of apply's, answered 503 and then refused on its retry, may have landed all the same. */
type Landed = 'created' | 'written' | null;

/**
 * What apply did to a proxy whose spec it PUT: `latest` is the read the PUT was conditioned on, `first`
 * the proxy as the command first found it (null: absent). When the PUT found nothing left to write but an
 * earlier write of this command may have landed, the change is that write's: its POST's (created), or its
 * PUT's if the proxy (the same one: same uid) moved on since `first` (configured).
 */
export function applyOutcome(
  first: StoredProxy | null,
  latest: StoredProxy,
  proxy: StoredProxy,
  landed: Landed,
): ApplyOutcome {
  if (changeOf(latest, proxy)) return 'configured';
  if (landed === 'created') return 'created';
  if (landed === 'written' && first !== null && first.uid === proxy.uid && changeOf(first, proxy))
    return 'configured';
  return 'unchanged';
}

/** What to say after proxy `failedAt` (0-based) of `names` failed, `done` being the outcomes before it. */
export function stoppedNotes(names: string[], failedAt: number, done: ApplyOutcome[]): string[] {
  const before =
    done.length === 0
      ? 'nothing applied before it'
      : `applied before it: ${done.map((o, i) => `proxy/${names[i]} ${o}`).join(', ')}`;
  const rest = names.slice(failedAt + 1);
  const notSent = rest.length === 0 ? '' : `; not sent: ${rest.map((n) => `proxy/${n}`).join(', ')}`;
  return [`stopped at proxy/${names[failedAt]} (${failedAt + 1} of ${names.length}): ${before}${notSent}`];
}

export async function applyProxies(ctx: Ctx): Promise<void> {
  const { io, args } = ctx;
  none(args.positionals);
  const file = args.values.file as string | undefined;
  if (!file) throw new UsageError('proxies apply needs -f FILE (YAML or JSON; - for stdin)');
  const output = outputOf(args.values, ['table', 'json', 'yaml']);
  const nothing = 'nothing was applied';
  const proxies = await readProxyFile(io, file, { nothing, specChecks: false });
  // Every proxy is read before anything is written, so that the spec checks the API makes against the
  // stored spec (a host or a missing credentialsRef it already has is no reason to refuse) are made here
  // the same way: a file the API would refuse any proxy of for its spec alone applies nothing.
  const stored: Array<StoredProxy | null> = [];
  for (const p of proxies) stored.push(await getIfExists(ctx, p.name));
  const source = file === '-' ? 'stdin' : file;
  const problems = proxies.flatMap((p, i) =>
    specProblems(p.where, p.spec, stored[i]?.spec as ProxySpec | undefined),
  );
  if (problems.length > 0) {
    throw new InputError(`${source} is not a valid proxy definition; ${nothing}`, problems);
  }
  // A file saved from proxies that have changed since writes nothing, not the ones still as it saw them.
  const stale = proxies.flatMap((p, i) => {
    const why = staleness(p.name, p.savedFrom, stored[i] ?? null, p.body.spec);
    return why === null ? [] : [`${p.where}: ${why}`];
  });
  if (stale.length > 0) throw staleFileError(source, stale, nothing);
  const names = proxies.map((p) => p.name);
  const outcomes: ApplyOutcome[] = [];
  const applied: StoredProxy[] = [];
  for (const [i, p] of proxies.entries()) {
    let result: Awaited<ReturnType<typeof applyOne>>;
    try {
      result = await applyOne(ctx, p, stored[i] ?? null);
    } catch (err) {
      // One proxy: its error says it all. Several: also what the ones before it became, and which not sent.
      if (proxies.length === 1) throw err;
      throw new PartialError(err, stoppedNotes(names, i, outcomes));
    }
    outcomes.push(result.outcome);
    applied.push(result.proxy);
    if (output === 'table') io.out(`proxy/${p.name} ${result.outcome}`);
  }
  if (output === 'json') io.out(json(applied.length === 1 ? applied[0] : applied));
  if (output === 'yaml') io.out(applied.map(yaml).join('\n---\n'));
}

/**
 * `-p`: an RFC 7396 merge patch of the spec, as JSON (`kubectl patch --type merge -p`). Checked here only
 * as far as the API would refuse it whatever the proxy: JSON, an object (a merge patch that is not an
 * object would replace the whole spec), and no key repeated in one object. Whether the patched spec is valid is the API's to say.
 */
export function parseMergePatch(raw: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (err) {
    // Without the parser's quote of the text around the fault: it would put a secret mistyped in the
    // patch (an unquoted password) on stderr, and into a CI log.
    const reason = (err as Error).message.replace(/,? *(?:\.\.\.)?".*$/s, '');
    throw new InputError(`-p is not JSON: ${reason}`, [], { cause: err });
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    const what = value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value;
    throw new InputError(
      `-p must be a JSON object (a merge patch of the spec, e.g. '{"capacity": 8}'), got ${what}`,
    );
  }
  // JSON.parse keeps the last of a repeated key; the API refuses one (duplicate_key), as the file reader does.
  const duplicate = findDuplicateKey(raw);
  if (duplicate !== null) {
    throw new InputError(
      `-p repeats the key ${duplicate.path.join('.')} in one object: say it once (which value was meant?)`,
    );
  }
  return value as Record<string, unknown>;
}

export async function patchProxy(ctx: Ctx): Promise<void> {
  const { io, args } = ctx;
  const name = proxyNameArg(args.positionals);
  const output = outputOf(args.values, ['table', 'json', 'yaml']);
  const raw = args.values.patch as string | undefined;
  if (raw === undefined) {
    throw new UsageError(
      `proxies patch needs -p '<JSON merge patch of the spec>', e.g. -p '{"capacity": 8}'`,
    );
  }
  const patch = parseMergePatch(raw);
  const { before, proxy } = await patchOne(ctx, name, patch);
  if (output === 'json') return io.out(json(proxy));
  if (output === 'yaml') return io.out(yaml(proxy));
  io.out(`proxy/${name} ${changeOf(before, proxy) ? 'patched' : 'unchanged'}`);
}

/**
 * `proxies cordon NAME` / `uncordon NAME`: `PATCH …/spec {"cordoned": …}` as `proxies patch` sends it
 * (docs/leases.md § Cordon). "already" when the API wrote nothing (the proxy was so already).
 */
export const cordonProxy =
  (cordoned: boolean) =>
  async (ctx: Ctx): Promise<void> => {
    const { io, args } = ctx;
    const name = proxyNameArg(args.positionals);
    const output = outputOf(args.values, ['table', 'json', 'yaml']);
    const { before, proxy } = await patchOne(ctx, name, { cordoned });
    if (output === 'json') return io.out(json(proxy));
    if (output === 'yaml') return io.out(yaml(proxy));
    const word = cordoned ? 'cordoned' : 'uncordoned';
    if (!changeOf(before, proxy)) return io.out(`proxy/${name} already ${word}`);
    io.out(
      cordoned
        ? `proxy/${name} cordoned: no new leases, renewals or gateway work; what runs finishes (within the leases' TTL)`
        : `proxy/${name} uncordoned`,
    );
  };

/**
 * The PATCH conditioned on the generation read, as apply's PUT: a merge patch applies to whatever spec is
 * stored, so a write by someone else in between loses nothing either way, but only the condition makes
 * "patched" vs "unchanged" this patch's own doing. On 412 it reads again and patches again.
 */
export async function patchOne(
  { api }: Ctx,
  name: string,
  patch: Record<string, unknown>,
): Promise<{ before: StoredProxy; proxy: StoredProxy }> {
  // A PATCH answered 503 and retried into 412 may have landed all the same (as in applyOne): then the
  // change is judged against the proxy as this command first read it, not against its own write re-read.
  let first: StoredProxy | null = null;
  let mayHaveLanded = false;
  for (let attempt = 1; ; attempt++) {
    const before = await api.call<StoredProxy>('GET', `/v1/proxies/${enc(name)}`, { role: 'admin' });
    first ??= before;
    try {
      const proxy = await api.call<StoredProxy>('PATCH', `/v1/proxies/${enc(name)}/spec`, {
        role: 'admin',
        body: patch,
        headers: { 'if-match': ifMatchOf(before) },
      });
      return { before: mayHaveLanded && first.uid === proxy.uid ? first : before, proxy };
    } catch (err) {
      if (attempt >= APPLY_ATTEMPTS || !isPreconditionFailed(err)) throw err;
      mayHaveLanded ||= (err as ApiCallError).retried;
    }
  }
}

export async function reconcileProxy({ api, io, args }: Ctx): Promise<void> {
  const name = proxyNameArg(args.positionals);
  const output = outputOf(args.values, ['table', 'json', 'yaml']);
  const res = await api.call<{ proxy: string; reason: string }>(
    'POST',
    `/v1/proxies/${enc(name)}/reconcile`,
    { role: 'admin' },
  );
  if (output === 'json') return io.out(json(res));
  if (output === 'yaml') return io.out(yaml(res));
  io.out(`proxy/${res.proxy} reconcile requested (reason: ${res.reason})`);
}
