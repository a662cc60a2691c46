// The fleet page's stylesheet (served as /fleet/assets/fleet.css): system fonts, one table, phase colours.
export const FLEET_CSS = `
:root { color-scheme: light dark; --fg: #1b1f24; --muted: #6a737d; --line: #d8dee4; --bg: #fff; --hi: #f3f6fa;
  --ok: #1a7f37; --warn: #9a6700; --bad: #cf222e; --info: #0969da; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --muted: #8d96a0; --line: #30363d; --bg: #0d1117; --hi: #161b22;
  --ok: #3fb950; --warn: #d29922; --bad: #f85149; --info: #58a6ff; } }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
header { display: flex; gap: 16px; align-items: baseline; padding: 12px 20px; border-bottom: 1px solid var(--line); }
header h1 { font-size: 18px; margin: 0; } header h1 a { color: inherit; text-decoration: none; }
header form { margin-left: auto; }
main { padding: 12px 20px; }
h2 { font-size: 15px; margin: 28px 0 8px; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid var(--line); vertical-align: middle; white-space: nowrap; }
td[data-col=attributes], td[data-col=cooldowns] { white-space: normal; }
th { font-size: 12px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); font-weight: 600; }
#fleet tbody tr { cursor: pointer; } #fleet tbody tr:hover, #fleet tbody tr.open { background: var(--hi); }
td a { color: var(--info); text-decoration: none; font-weight: 600; }
.muted { color: var(--muted); font-size: 12px; } .num { font-variant-numeric: tabular-nums; }
.badge { display: inline-block; padding: 0 7px; border-radius: 10px; font-size: 12px; font-weight: 600; border: 1px solid currentColor; }
.b-ready, .b-available, .b-ok { color: var(--ok); }
.b-unhealthy, .b-failed, .b-bad { color: var(--bad); }
.b-suspect, .b-pending, .b-provisioning, .b-provisioned, .b-deleting, .b-running, .b-cooldown { color: var(--warn); }
.b-created, .b-condition, .b-health, .b-latency, .b-deletion { color: var(--info); }
.attr, .cool { font-size: 12px; background: var(--hi); border: 1px solid var(--line); border-radius: 4px; padding: 0 4px; }
.cool { color: var(--warn); }
.spark { vertical-align: middle; } .spark polyline { fill: none; stroke: var(--info); stroke-width: 1.5; } .spark circle { fill: var(--info); }
.live { font-size: 12px; color: var(--muted); } .live[data-state=live]::before { content: "\\25CF  "; color: var(--ok); }
.live[data-state=reconnecting]::before, .live[data-state=down]::before { content: "\\25CF  "; color: var(--bad); }
#detail { position: fixed; top: 0; right: 0; bottom: 0; width: min(600px, 48vw); overflow: auto; padding: 14px 18px;
  background: var(--bg); border-left: 1px solid var(--line); box-shadow: -8px 0 24px rgba(0,0,0,.12); }
#detail h2 { margin-top: 0; font-size: 16px; } #detail h3, .detail-page h3 { font-size: 13px; margin: 14px 0 4px; }
#detail .close { float: right; }
pre { background: var(--hi); border: 1px solid var(--line); padding: 8px; font-size: 12px; overflow: auto; }
ul.events { list-style: none; padding: 0; margin: 0; font-size: 12px; } ul.events li { padding: 2px 0; white-space: normal; }
ul.events time { color: var(--muted); font-variant-numeric: tabular-nums; }
.login { max-width: 420px; margin: 60px auto; } .login input { width: 100%; margin: 6px 0 10px; padding: 6px; }
button { font: inherit; padding: 3px 10px; border: 1px solid var(--line); border-radius: 6px; background: var(--hi); color: inherit; cursor: pointer; }
`;
