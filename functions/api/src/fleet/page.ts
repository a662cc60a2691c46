// The fleet page's server-rendered HTML: the whole table is in the first response (readable without
// script), and /fleet/assets/fleet.js keeps it live from the SSE stream. Every value goes through esc().
import type { ProxyDetail } from './detail.js';
import { esc } from './escape.js';
import { sparkline } from './sparkline.js';
import {
  CORDONED_TITLE,
  type FleetRow,
  type FleetView,
  healthyCell,
  UNREADABLE_STATE_TITLE,
} from './view-model.js';

function layout(title: string, body: string, script = true): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)}</title><link rel="icon" href="data:,"><link rel="stylesheet" href="/fleet/assets/fleet.css"></head>
<body>${body}${script ? '<script src="/fleet/assets/fleet.js" defer></script>' : ''}</body></html>`;
}

const badge = (value: string | null, cls = value) =>
  value
    ? `<span class="badge b-${esc(String(cls).toLowerCase())}">${esc(value)}</span>`
    : '<span class="muted">–</span>';

function untilText(iso: string, now: Date): string {
  const s = Math.max(0, Math.round((Date.parse(iso) - now.getTime()) / 1000));
  return s < 120 ? `${s}s` : `${Math.round(s / 60)}m`;
}

export const COLUMNS = [
  'Name',
  'Phase',
  'Healthy',
  'BASIC',
  'EGRESS',
  'Latency',
  'Leases',
  'Cooldowns',
  'Gateway',
  'Location',
  'Attributes',
] as const;

export function rowHtml(r: FleetRow, now: Date): string {
  const attrs = Object.entries(r.attributes)
    .map(([k, v]) => `<span class="attr">${esc(k)}=${esc(v)}</span>`)
    .join(' ');
  const cooldowns = r.cooldowns
    .map(
      (c) =>
        `<span class="cool" title="${esc(c.reason)}">${esc(c.target)} ${esc(untilText(c.until, now))}</span>`,
    )
    .join(' ');
  const owner = r.owner
    ? `${esc(r.owner.owner)}${r.owner.drainEpoch !== null ? ' <span class="muted">(draining)</span>' : ''}`
    : '';
  const notFor = r.unreachableRoutes.length
    ? ` <span class="muted" title="target check fails through it: left out of these routes (unless it fails through every proxy of the route: fail open)">not for ${esc(r.unreachableRoutes.join(', '))}</span>`
    : '';
  const h = healthyCell(r);
  const healthy = h
    ? `<span class="badge b-${h.cls}"${h.title ? ` title="${esc(h.title)}"` : ''}>${h.text}</span>`
    : badge(null);
  return `<tr data-name="${esc(r.name)}" data-phase="${esc(r.phase)}">
<td data-col="name"><a href="/fleet/proxies/${encodeURIComponent(r.name)}">${esc(r.name)}</a> <span class="muted">${esc(r.mode)}</span></td>
<td data-col="phase">${badge(r.phase)}${r.deleting && r.phase !== 'Deleting' ? ' <span class="muted">deleting</span>' : ''}${r.cordoned ? ` <span class="muted" title="${esc(CORDONED_TITLE)}">cordoned</span>` : ''}</td>
<td data-col="healthy">${healthy}</td>
<td data-col="basic">${badge(r.tiers.BASIC ?? null)}</td>
<td data-col="egress">${badge(r.tiers.EGRESS ?? null)}${r.egressProblem ? ` <span class="muted">${esc(r.egressProblem)}</span>` : ''}</td>
<td data-col="latency"><span class="num">${r.latencyMillis === null ? '–' : `${esc(r.latencyMillis)} ms`}</span> ${sparkline(r.latencyHistory)}</td>
<td data-col="leases" class="num">${esc(r.activeLeases)}/${esc(r.capacity)}${r.leaseStateInvalid ? ` <span class="muted" title="${esc(UNREADABLE_STATE_TITLE)}">invalid state</span>` : ''}</td>
<td data-col="cooldowns">${cooldowns}</td>
<td data-col="gateway">${owner}${notFor}</td>
<td data-col="location">${esc(r.location)}${r.ip ? ` <span class="muted">${esc(r.ip)}</span>` : ''}</td>
<td data-col="attributes">${attrs}</td>
</tr>`;
}

export function summaryText(v: FleetView): string {
  const parts = Object.entries(v.phases).map(([p, n]) => `${n} ${p}`);
  return `${v.rows.length} ${v.rows.length === 1 ? 'proxy' : 'proxies'}${parts.length ? `: ${parts.join(', ')}` : ''}`;
}

function jobsHtml(v: FleetView): string {
  const rows = v.jobs
    .map(
      (
        j,
      ) => `<tr><td>${esc(j.job)}</td><td>${badge(j.ok === null ? 'running' : j.ok ? 'ok' : 'failed', j.ok === false ? 'bad' : 'ok')}</td>
<td><time datetime="${esc(j.startedAt)}">${esc(j.startedAt)}</time></td><td class="muted">${esc(
        Object.entries(j.counts)
          .map(([k, n]) => `${k} ${n}`)
          .join(', '),
      )}${j.error ? ` — ${esc(j.error)}` : ''}</td></tr>`,
    )
    .join('');
  return `<table class="jobs"><thead><tr><th>Job</th><th>Last run</th><th>Started</th><th>Counts</th></tr></thead><tbody id="jobs-body">${rows}</tbody></table>`;
}

export function fleetPage(v: FleetView, now: Date): string {
  const head = COLUMNS.map((c) => `<th>${c}</th>`).join('');
  const rows = v.rows.map((r) => rowHtml(r, now)).join('');
  const empty = `<tr class="empty"><td colspan="${COLUMNS.length}">No proxies yet. Create one with <code>proxyplane proxies create -f proxy.yaml</code>.</td></tr>`;
  return layout(
    'proxyplane fleet',
    `<header><h1>proxyplane fleet</h1><span id="summary">${esc(summaryText(v))}</span>
<span id="live" class="live" data-state="static">static</span><form method="post" action="/fleet/logout"><button>Sign out</button></form></header>
<main><table id="fleet"><thead><tr>${head}</tr></thead><tbody id="fleet-body">${rows || empty}</tbody></table>
<aside id="detail" hidden></aside>
<h2>Periodic jobs</h2>${jobsHtml(v)}</main>`,
  );
}

const pre = (v: unknown) => `<pre>${esc(JSON.stringify(v, null, 2))}</pre>`;

export function detailHtml(d: ProxyDetail): string {
  const events = d.events
    .map(
      (e) =>
        `<li><time datetime="${esc(e.at)}">${esc(e.at)}</time> <span class="badge b-${esc(e.kind)}">${esc(e.kind)}</span> ${esc(e.text)}</li>`,
    )
    .join('');
  return `<h2>${esc(d.row.name)} ${badge(d.row.phase)}</h2>
<p class="muted">uid ${esc(d.uid)} · generation ${esc(d.generation)} · ${esc(d.row.mode)} · ${esc(d.row.location)}</p>
<h3>Recent events</h3><ul class="events">${events}</ul>
<h3>Active leases</h3>${d.leases.length ? `<ul>${d.leases.map((l) => `<li>${esc(l.leaseId)} until ${esc(l.expiresAt)}${l.exclusive ? ' (exclusive)' : ''}</li>`).join('')}</ul>` : '<p class="muted">none</p>'}
<h3>Health</h3>${pre(d.health)}
<h3>Spec</h3>${pre(d.spec)}
<h3>Status</h3>${pre(d.status)}`;
}

export function detailPage(d: ProxyDetail): string {
  return layout(
    `${d.row.name} · proxyplane`,
    `<header><h1><a href="/fleet">proxyplane fleet</a> / ${esc(d.row.name)}</h1></header><main class="detail-page">${detailHtml(d)}</main>`,
    false,
  );
}

export function loginPage(message: string): string {
  return layout(
    'Sign in · proxyplane fleet',
    `<main class="login"><h1>proxyplane fleet</h1><p>${esc(message)}</p>
<form method="post" action="/fleet/login"><label>Admin token <input type="password" name="token" autocomplete="current-password" required></label>
<button type="submit">Sign in</button></form>
<p class="muted">An admin token (<code>PROXYPLANE_ADMIN_TOKEN</code>) or a Google identity token of an admin
(<code>gcloud auth print-identity-token</code>). It is kept in an HttpOnly cookie for this page only.</p></main>`,
    false,
  );
}
