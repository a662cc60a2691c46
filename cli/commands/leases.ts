// proxyplane leases acquire [--selector k=v] [--protocol P] [--target T] [--ttl S] [--exclusive]
// | renew ID [--ttl S]
// | report ID ok|rate_limited|banned [--target T] | release ID

import { randomUUID } from 'node:crypto';
import { cooldownSite } from '../../shared/src/domain/leases/cooldown.js';
import { TTL_BOUNDS } from '../../shared/src/domain/leases/model.js';
import { canonicalTarget } from '../../shared/src/domain/leases/target.js';
import { RenewResponse } from '../../shared/src/domain/leases/wire.js';
import { ProxyProtocol } from '../../shared/src/domain/proxy.js';
import { exactlyOne, keyValues, none, oneOfEach, outputOf, positiveInt } from '../args.js';
import type { Ctx } from '../context.js';
import { readAnswer, UsageError } from '../errors.js';
import { json, shellQuote, yaml } from '../output.js';

interface Grant {
  leaseId: string;
  proxy: { name: string; url: string; attributes: Record<string, string>; latencyMillis: number | null };
  expiresAt: string;
  ttlSeconds: number;
  target: string | null;
  exclusive: boolean;
}

export const leaseOptions = {
  selector: { type: 'string', multiple: true, short: 'l' },
  protocol: { type: 'string', multiple: true },
  target: { type: 'string' },
  ttl: { type: 'string' },
  exclusive: { type: 'boolean' },
} as const;

export async function acquireLease({ api, io, args }: Ctx): Promise<void> {
  none(args.positionals);
  const output = outputOf(args.values, ['table', 'json', 'yaml', 'env', 'url']);
  const body: Record<string, unknown> = {
    selector: keyValues(args.values.selector as string[] | undefined, '--selector'),
  };
  // Absent: the service's default (http only; SOCKS5 is opt-in, docs/leases.md).
  const protocols = oneOfEach(
    args.values.protocol as string[] | undefined,
    '--protocol',
    ProxyProtocol.options,
  );
  if (protocols.length > 0) body.protocols = protocols;
  if (args.values.target !== undefined) body.target = args.values.target;
  if (args.values.ttl !== undefined) body.ttlSeconds = leaseTtl(args.values.ttl as string);
  if (args.values.exclusive) body.exclusive = true;
  // A new key per command, the same on the client's retries — of a 503, and of an answer lost (a timeout,
  // a reset, a 500/502/504): a retried acquire whose first answer was lost gets that lease rather than a
  // second one holding a slot nobody knows of.
  const headers = { 'idempotency-key': randomUUID() };
  const g = await api.call<Grant>('POST', '/v1/leases', { role: 'crawler', body, headers, idempotent: true });
  if (output === 'json') return io.out(json(g));
  if (output === 'yaml') return io.out(yaml(g));
  if (output === 'url') {
    // The URL alone on stdout, for `curl -x "$(…)"`; the id on stderr, or nobody could release the lease
    // and it held its slot until its TTL.
    io.err(
      `lease ${g.leaseId} on ${g.proxy.name} until ${g.expiresAt} (release: proxyplane leases release ${g.leaseId})`,
    );
    return io.out(g.proxy.url);
  }
  if (output === 'env') {
    // For `eval "$(proxyplane leases acquire … -o env)"`: the URL carries credentials, so it stays in
    // the shell's variables rather than on screen.
    return io.out(
      [
        `PROXYPLANE_LEASE_ID=${shellQuote(g.leaseId)}`,
        `PROXYPLANE_PROXY_URL=${shellQuote(g.proxy.url)}`,
        `PROXYPLANE_PROXY_NAME=${shellQuote(g.proxy.name)}`,
      ].join('\n'),
    );
  }
  io.out(
    [
      `lease     ${g.leaseId}`,
      `proxy     ${g.proxy.name}${g.proxy.latencyMillis === null ? '' : ` (${g.proxy.latencyMillis} ms)`}`,
      `url       ${g.proxy.url}`,
      `target    ${g.target ?? '-'}`,
      `expires   ${g.expiresAt} (${g.ttlSeconds}s${g.exclusive ? ', exclusive' : ''})`,
      '',
      `fetch:    curl -x ${shellQuote(g.proxy.url)} http://…`,
      `release:  proxyplane leases release ${g.leaseId}`,
    ].join('\n'),
  );
}

/**
 * The one lease ID given. An empty one (`leases release "$PROXYPLANE_LEASE_ID"` with the variable unset) or
 * a dot segment went out as a path the URL folds away (DELETE /v1/leases/, /v1/): answered as an API 404
 * "no route, is it older than this CLI?", where it is bad usage and nothing should be sent.
 */
function leaseIdArg(positionals: string[]): string {
  const id = exactlyOne(positionals, 'lease ID');
  if (id.trim() === '' || id === '.' || id === '..') throw new UsageError(`not a lease ID: "${id}"`);
  return id;
}

export async function releaseLease({ api, io, args }: Ctx): Promise<void> {
  const id = leaseIdArg(args.positionals);
  outputOf(args.values, ['table']);
  await api.call('DELETE', `/v1/leases/${encodeURIComponent(id)}`, { role: 'crawler', noContent: true });
  io.out(`lease ${id} released`);
}

export const renewOptions = { ttl: leaseOptions.ttl } as const;

/** The lease routes' own bounds (docs/leases.md § Lifetime): refused here rather than sent. */
function leaseTtl(raw: string): number {
  const ttl = positiveInt(raw, '--ttl', TTL_BOUNDS.default, TTL_BOUNDS.max);
  if (ttl < TTL_BOUNDS.min)
    throw new UsageError(
      `--ttl must be an integer from ${TTL_BOUNDS.min} to ${TTL_BOUNDS.max}, got "${raw}"`,
    );
  return ttl;
}

/** Seconds this machine's clock may be off the API's before `renew` misreads an extension as none. */
const RENEW_CLOCK_MARGIN_S = 30;

/**
 * The renewal, checked against the schema the API publishes for it (wire.ts RenewResponse, in its
 * /openapi.json), as fleet watch checks its state.
 */
const readRenewal = (body: unknown): RenewResponse =>
  readAnswer(RenewResponse, body, 'POST /v1/leases/{id}/renew is not a renewal this CLI reads');

export async function renewLease({ api, io, args }: Ctx): Promise<void> {
  const id = leaseIdArg(args.positionals);
  const output = outputOf(args.values, ['table', 'json', 'yaml']);
  const body: Record<string, unknown> = {};
  if (args.values.ttl !== undefined) body.ttlSeconds = leaseTtl(args.values.ttl as string);
  const path = `/v1/leases/${encodeURIComponent(id)}/renew`;
  const raw = await api.call<unknown>('POST', path, { role: 'crawler', body });
  const r = readRenewal(raw);
  // As the API sent it, once it was found to fit: fields of a newer API are kept, not stripped.
  if (output === 'json') return io.out(json(raw));
  if (output === 'yaml') return io.out(yaml(raw));
  // A renewal never shortens a lease (docs/leases.md): with a --ttl shorter than what is left, the expiry
  // stands and only the TTL of later renewals changes — say so rather than print a TTL beside a far time.
  // Only with a --ttl (without one a renewal always extends), and with a margin for this machine's clock.
  const left = Math.round((Date.parse(r.expiresAt) - io.now().getTime()) / 1000);
  io.out(
    body.ttlSeconds !== undefined && left > r.ttlSeconds + RENEW_CLOCK_MARGIN_S
      ? `lease ${r.leaseId} renewed: its expiry stands at ${r.expiresAt} (${left}s left, more than its TTL, now ${r.ttlSeconds}s)`
      : `lease ${r.leaseId} renewed until ${r.expiresAt} (TTL ${r.ttlSeconds}s)`,
  );
}

export const reportOptions = { target: leaseOptions.target } as const;

const RESULTS = ['ok', 'rate_limited', 'banned'];

export async function reportLease({ api, io, args }: Ctx): Promise<void> {
  if (args.positionals.length !== 2)
    throw new UsageError(`expected a lease ID and a result (${RESULTS.join(', ')})`);
  const [given, result] = args.positionals as [string, string];
  const id = leaseIdArg([given]);
  if (!RESULTS.includes(result))
    throw new UsageError(`the result must be one of ${RESULTS.join(', ')}, got "${result}"`);
  outputOf(args.values, ['table']);
  const body: Record<string, unknown> = { result };
  if (args.values.target !== undefined) body.target = args.values.target;
  await api.call('POST', `/v1/leases/${encodeURIComponent(id)}/report`, {
    role: 'crawler',
    body,
    noContent: true,
  });
  // The API's fallback (docs/leases.md): the reported target, else the lease's, else every target.
  // As the API keeps it — its site: the host in one spelling, lower case, any port — which it has just
  // accepted.
  const named = args.values.target === undefined ? undefined : String(args.values.target);
  const canonical = named === undefined ? null : canonicalTarget(named);
  const target =
    named === undefined
      ? "the lease's target's host, any port (every target if it had none)"
      : canonical === null
        ? named
        : `${cooldownSite(canonical)}, any port`;
  io.out(
    result === 'ok'
      ? `lease ${id} reported ok`
      : `lease ${id} reported ${result}: its proxy cools down for ${target}`,
  );
}
