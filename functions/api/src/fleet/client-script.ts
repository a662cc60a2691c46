// The browser script of the fleet page (served as /fleet/assets/fleet.js). Plain ES5-level DOM code, no
// framework: it renders with textContent only, so no value from the API can become markup.
// It lives in a .ts module so that the deploy build, which copies tsc output, ships it too.
import { SUSPECT_REASONS } from '../../../../shared/src/domain/health/verdict-reason.js';
import { CORDONED_TITLE, UNREADABLE_STATE_TITLE } from './view-model.js';

export const FLEET_JS = String.raw`
// Keeps the fleet table live: one EventSource on /fleet/events (the cookie authenticates it), each
// "fleet" event replaces the table body; a click on a row opens its detail beside the table.
(function () {
  'use strict';
  var body = document.getElementById('fleet-body');
  var live = document.getElementById('live');
  var summary = document.getElementById('summary');
  var jobsBody = document.getElementById('jobs-body');
  var detail = document.getElementById('detail');
  var openName = null;
  // The proxy whose detail the panel shows (set once its content is in): only that one's 404 closes it.
  var shownName = null;
  var COLS = 11;
  var SW = 80, SH = 18;
  var SUSPECT_REASONS = ${JSON.stringify([...SUSPECT_REASONS])};

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function badge(value, cls) {
    if (value === null || value === undefined) return el('span', 'muted', '\u2013');
    return el('span', 'badge b-' + String(cls || value).toLowerCase(), value);
  }
  function cell(tr, col) {
    var td = el('td');
    td.setAttribute('data-col', col);
    for (var i = 2; i < arguments.length; i++) {
      var c = arguments[i];
      if (c === null || c === undefined) continue;
      if (typeof c === 'string') c = document.createTextNode(c);
      if (td.childNodes.length) td.appendChild(document.createTextNode(' '));
      td.appendChild(c);
    }
    tr.appendChild(td);
    return td;
  }
  function spark(values) {
    if (!values || !values.length) return null;
    var ns = 'http://www.w3.org/2000/svg';
    var vals = values.length === 1 ? [values[0], values[0]] : values;
    var svg = document.createElementNS(ns, 'svg');
    svg.setAttribute('class', 'spark');
    svg.setAttribute('width', SW);
    svg.setAttribute('height', SH);
    svg.setAttribute('viewBox', '-2 0 ' + (SW + 4) + ' ' + SH);
    var title = document.createElementNS(ns, 'title');
    title.textContent = 'last reported: ' + values.join(', ') + ' ms';
    svg.appendChild(title);
    var max = Math.max.apply(null, vals), min = Math.min.apply(null, vals), span = max - min || 1;
    var step = SW / (vals.length - 1);
    var pts = vals.map(function (v, i) {
      var y = SH - 2 - ((v - min) / span) * (SH - 4);
      return (i * step).toFixed(1) + ',' + y.toFixed(1);
    });
    var line = document.createElementNS(ns, 'polyline');
    line.setAttribute('points', pts.join(' '));
    svg.appendChild(line);
    var end = pts[pts.length - 1].split(',');
    var dot = document.createElementNS(ns, 'circle');
    dot.setAttribute('cx', end[0]);
    dot.setAttribute('cy', end[1]);
    dot.setAttribute('r', '2');
    svg.appendChild(dot);
    return svg;
  }
  function until(iso) {
    var s = Math.max(0, Math.round((Date.parse(iso) - Date.now()) / 1000));
    return s < 120 ? s + 's' : Math.round(s / 60) + 'm';
  }
  function row(r) {
    var tr = el('tr');
    tr.setAttribute('data-name', r.name);
    tr.setAttribute('data-phase', r.phase);
    var a = el('a', null, r.name);
    a.href = '/fleet/proxies/' + encodeURIComponent(r.name);
    cell(tr, 'name', a, el('span', 'muted', r.mode));
    var cordon = null;
    if (r.cordoned) {
      cordon = el('span', 'muted', 'cordoned');
      cordon.title = ${JSON.stringify(CORDONED_TITLE)};
    }
    cell(tr, 'phase', badge(r.phase), r.deleting && r.phase !== 'Deleting' ? el('span', 'muted', 'deleting') : null, cordon);
    // As page.ts renders it (view-model.ts healthyCell): suspect for a SUSPECT verdict, the reason as title.
    var healthy = null;
    if (r.healthy !== null) {
      var suspect = r.healthy && SUSPECT_REASONS.indexOf(r.healthyReason) >= 0;
      healthy = r.healthy ? (suspect ? badge('suspect') : badge('yes', 'ok')) : badge('no', 'bad');
      if (r.healthyReason) healthy.title = r.healthyReason;
    } else healthy = badge(null);
    cell(tr, 'healthy', healthy);
    cell(tr, 'basic', badge(r.tiers.BASIC === undefined ? null : r.tiers.BASIC));
    cell(tr, 'egress', badge(r.tiers.EGRESS === undefined ? null : r.tiers.EGRESS), r.egressProblem ? el('span', 'muted', r.egressProblem) : null);
    cell(tr, 'latency', el('span', 'num', r.latencyMillis === null ? '\u2013' : r.latencyMillis + ' ms'), spark(r.latencyHistory));
    var invalid = null;
    if (r.leaseStateInvalid) {
      invalid = el('span', 'muted', 'invalid state');
      invalid.title = ${JSON.stringify(UNREADABLE_STATE_TITLE)};
    }
    cell(tr, 'leases', r.activeLeases + '/' + r.capacity, invalid).className = 'num';
    var cools = cell(tr, 'cooldowns');
    r.cooldowns.forEach(function (c) {
      var s = el('span', 'cool', c.target + ' ' + until(c.until));
      s.title = c.reason;
      cools.appendChild(s);
      cools.appendChild(document.createTextNode(' '));
    });
    var gw = cell(tr, 'gateway', r.owner ? r.owner.owner : null, r.owner && r.owner.drainEpoch !== null ? el('span', 'muted', '(draining)') : null);
    if (r.unreachableRoutes && r.unreachableRoutes.length) {
      var nf = el('span', 'muted', 'not for ' + r.unreachableRoutes.join(', '));
      nf.title = 'target check fails through it: left out of these routes (unless it fails through every proxy of the route: fail open)';
      gw.appendChild(document.createTextNode(' '));
      gw.appendChild(nf);
    }
    cell(tr, 'location', r.location, r.ip ? el('span', 'muted', r.ip) : null);
    var attrs = cell(tr, 'attributes');
    Object.keys(r.attributes).forEach(function (k) {
      attrs.appendChild(el('span', 'attr', k + '=' + r.attributes[k]));
      attrs.appendChild(document.createTextNode(' '));
    });
    if (r.name === openName) tr.className = 'open';
    return tr;
  }
  function summaryText(v) {
    var parts = Object.keys(v.phases).map(function (p) { return v.phases[p] + ' ' + p; });
    return v.rows.length + (v.rows.length === 1 ? ' proxy' : ' proxies') + (parts.length ? ': ' + parts.join(', ') : '');
  }
  function render(v) {
    var frag = document.createDocumentFragment();
    if (!v.rows.length) {
      var tr = el('tr', 'empty');
      var td = el('td', null, 'No proxies yet. Create one with proxyplane proxies create -f proxy.yaml.');
      td.colSpan = COLS;
      tr.appendChild(td);
      frag.appendChild(tr);
    }
    v.rows.forEach(function (r) { frag.appendChild(row(r)); });
    body.replaceChildren(frag);
    summary.textContent = summaryText(v);
    if (jobsBody) {
      var jf = document.createDocumentFragment();
      v.jobs.forEach(function (j) {
        var tr = el('tr');
        tr.appendChild(el('td', null, j.job));
        var st = el('td');
        st.appendChild(badge(j.ok === null ? 'running' : j.ok ? 'ok' : 'failed', j.ok === false ? 'bad' : 'ok'));
        tr.appendChild(st);
        tr.appendChild(el('td', null, j.startedAt));
        var counts = Object.keys(j.counts).map(function (k) { return k + ' ' + j.counts[k]; }).join(', ');
        tr.appendChild(el('td', 'muted', counts + (j.error ? ' \u2014 ' + j.error : '')));
        jf.appendChild(tr);
      });
      jobsBody.replaceChildren(jf);
    }
  }
  function setLive(state, text) {
    live.setAttribute('data-state', state);
    live.textContent = text;
  }
  function showDetail(name) {
    fetch('/fleet/api/proxies/' + encodeURIComponent(name), { credentials: 'same-origin', headers: { accept: 'application/json' } })
      .then(function (res) {
        // The proxy shown was deleted: its panel closes, rather than keep stale content and fetch it again
        // on every live update. A first fetch's 404 may come from an instance whose view has not caught up
        // with the stream's (a proxy just created): left open, the next update fetches it again.
        if (res.status === 404 && openName === name && shownName === name) { openName = null; detail.hidden = true; }
        return res.ok ? res.json() : null;
      })
      .then(function (d) {
        if (!d || openName !== name) return;
        detail.replaceChildren();
        var close = el('button', 'close', 'close');
        close.onclick = function () { openName = null; detail.hidden = true; };
        detail.appendChild(close);
        var h = el('h2', null, d.row.name + ' ');
        h.appendChild(badge(d.row.phase));
        detail.appendChild(h);
        detail.appendChild(el('p', 'muted', 'uid ' + d.uid + ' \u00b7 generation ' + d.generation + ' \u00b7 ' + d.row.mode + ' \u00b7 ' + d.row.location));
        detail.appendChild(el('h3', null, 'Recent events'));
        var ul = el('ul', 'events');
        d.events.forEach(function (e) {
          var li = el('li');
          li.appendChild(el('time', null, e.at));
          li.appendChild(document.createTextNode(' '));
          li.appendChild(el('span', 'badge b-' + e.kind, e.kind));
          li.appendChild(document.createTextNode(' ' + e.text));
          ul.appendChild(li);
        });
        detail.appendChild(ul);
        detail.appendChild(el('h3', null, 'Active leases'));
        detail.appendChild(el('p', d.leases.length ? null : 'muted', d.leases.length ? d.leases.map(function (l) { return l.leaseId + ' until ' + l.expiresAt; }).join('\n') : 'none'));
        [['Health', d.health], ['Spec', d.spec], ['Status', d.status]].forEach(function (p) {
          detail.appendChild(el('h3', null, p[0]));
          detail.appendChild(el('pre', null, JSON.stringify(p[1], null, 2)));
        });
        detail.hidden = false;
        shownName = name;
      })
      .catch(function () {});
  }
  body.addEventListener('click', function (ev) {
    var tr = ev.target.closest && ev.target.closest('tr[data-name]');
    if (!tr || ev.metaKey || ev.ctrlKey || ev.shiftKey) return;
    ev.preventDefault();
    openName = tr.getAttribute('data-name');
    Array.prototype.forEach.call(body.querySelectorAll('tr.open'), function (r) { r.className = ''; });
    tr.className = 'open';
    showDetail(openName);
  });

  document.addEventListener('keydown', function (ev) {
    if (ev.key === 'Escape' && openName) { openName = null; detail.hidden = true; }
  });

  function onView(v) {
    render(v);
    setLive('live', 'live \u00b7 ' + new Date(v.generatedAt).toLocaleTimeString());
    if (!openName) return;
    // The stream says what exists: a proxy gone from it closes its panel, whatever a fetch answered (one
    // deleted before its first fetch 404s without ever being shown, and was fetched again at every update).
    var listed = v.rows.some(function (r) { return r.name === openName; });
    if (listed) showDetail(openName);
    else { openName = null; shownName = null; detail.hidden = true; }
  }
  // EventSource reconnects by itself after a dropped stream (Cloud Run ends each at its request timeout), but
  // gives up for good (CLOSED) on any answer other than 200, and does not say which: a reconnect that lands
  // on an instance at its stream cap, or still loading its views, is a 503 worth waiting out. A HEAD of the
  // stream (it holds no slot and builds no view) tells a credential gone (to the login form, once: no loop
  // spending the auth-failure limit) from a refusal: that one is retried after its Retry-After or a growing
  // backoff with jitter, at most 60 s apart and MAX_RETRIES times, before the page says to reload.
  var MAX_RETRIES = 8;
  var retries = 0;
  function down() { setLive('down', 'disconnected: reload the page'); }
  function retry(after) {
    if (retries >= MAX_RETRIES) return down();
    var base = Math.max(after > 0 ? after : 0, Math.min(48, 5 * Math.pow(2, retries++)));
    setTimeout(connect, Math.min(60, base * (1 + Math.random() / 4)) * 1000);
  }
  function connect() {
    var es = new EventSource('/fleet/events');
    es.addEventListener('fleet', function (ev) { onView(JSON.parse(ev.data)); });
    es.onopen = function () { retries = 0; };
    es.onerror = function () {
      setLive('reconnecting', 'reconnecting\u2026');
      if (es.readyState !== EventSource.CLOSED) return;
      fetch('/fleet/events', { method: 'HEAD', credentials: 'same-origin', cache: 'no-store' })
        .then(function (res) {
          if (res.status === 401 || res.status === 403) location.href = '/fleet/login';
          else if (res.ok || res.status === 429 || res.status === 503) retry(Number(res.headers.get('retry-after')));
          else down();
        }, function () { retry(0); });
    };
  }
  if (window.EventSource) {
    connect();
  } else {
    setInterval(function () {
      fetch('/fleet/api/state', { credentials: 'same-origin' }).then(function (r) { return r.json(); }).then(onView).catch(function () {});
    }, 3000);
  }
})();
`;
