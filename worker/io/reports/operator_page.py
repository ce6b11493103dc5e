"""The worker's live operator page (``GET /``): one self-contained HTML document.

Server-rendered from an :class:`~worker.core.lifecycle.overview.Overview`, so it reads with
JavaScript off; a few lines of inline JavaScript poll ``/overview.json`` every few seconds
and put the fragments it carries (rendered by :func:`render_fragments`, the same code as the
first view) in place, so the live view and the first view never differ. No CDN, no build
step, print CSS included. Every echoed value is escaped here (the view model bounds them).
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

from worker.core.lifecycle.overview import LayerOverview, Overview, VersionRow
from worker.io.reports.overlap_svg import PALETTE, timeline_svg

__all__ = ["SECTIONS", "render_fragments", "render_operator_page"]

#: The ids of the page's live sections, in page order.
SECTIONS = ("worker", "layers", "quarantine")

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:0 auto;max-width:1200px;padding:12px 20px;color:#222}
h1{font-size:20px;margin:4px 0}h2{font-size:17px;margin:18px 0 6px}
h3{font-size:15px;margin:10px 0 4px}
table{border-collapse:collapse;margin:4px 0 8px}td,th{border-bottom:1px solid #ddd;padding:3px 8px;
text-align:left;vertical-align:top}th{background:#f4f4f4}.num{text-align:right}
.swatch{display:inline-block;width:12px;height:12px;border-radius:2px;margin-right:4px;
vertical-align:-1px}
.muted{color:#666}.warn{color:#a40000;font-weight:bold}.ok{color:#006b3c}
.gate.open{color:#006b3c}.gate.closed{color:#7a4a00}
.layer{border-top:2px solid #ccc;margin-top:14px}
svg.timeline{max-width:860px;display:block}svg text{font:12px system-ui,sans-serif}
svg .tick{fill:#666;font-size:11px}#status{float:right;font-size:12px}
td.broken{max-width:520px;overflow-wrap:anywhere}
@media print{#status,.noprint{display:none}body{max-width:none;font-size:11px;padding:0}
.layer{break-inside:avoid}*{-webkit-print-color-adjust:exact;print-color-adjust:exact}
a{color:inherit;text-decoration:none}}
"""

_JS = """
(function(){
  var ms = %d, url = %s, status = document.getElementById('status');
  function tick(){
    fetch(url, {cache: 'no-store'}).then(function(r){
      if(!r.ok) throw new Error('HTTP ' + r.status);
      return r.json();
    }).then(function(doc){
      Object.keys(doc.html).forEach(function(id){
        var el = document.getElementById(id);
        if(el) el.innerHTML = doc.html[id];
      });
      status.textContent = 'live: updated ' + doc.model.now;
      status.className = 'ok';
      document.body.setAttribute('data-updated', doc.model.now);
    }).catch(function(e){
      status.textContent = 'not updated (' + e.message + '): showing the last view';
      status.className = 'warn';
    }).then(function(){ setTimeout(tick, ms); });
  }
  setTimeout(tick, ms);
})();
"""


def _e(value: object) -> str:
    return html.escape(str(value))


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1%}"


def _version_row(v: VersionRow) -> str:
    colour = PALETTE[v.colour]
    return (
        f'<tr data-version="{_e(v.version)}" data-state="{_e(v.state)}">'
        f'<td><span class="swatch" style="background:{colour}"></span>{_e(v.version)}</td>'
        f"<td>{_e(v.mode)}</td><td>{_e(v.state)}</td><td>{_e(v.change_class or '-')}</td>"
        f'<td class="num">{v.age_cycles:.1f}</td>'
        f'<td class="num">{_pct(v.attainment)} / {_pct(v.objective)}</td>'
        f'<td class="num">{_pct(v.budget_left)}</td><td class="num">{v.evaluated}</td></tr>'
    )


def _layer(lo: LayerOverview, o: Overview) -> str:
    rows = "".join(_version_row(v) for v in lo.versions)
    head = (
        "<tr><th>version</th><th>mode</th><th>state</th><th>class</th><th>age (cycles)</th>"
        "<th>attainment / objective</th><th>error budget left</th><th>evaluated</th></tr>"
    )
    first: dict[
        str, str
    ] = {}  # major -> colour of its oldest active revision (where its counter is drawn)
    for v in lo.versions:
        if v.state == "active":
            first.setdefault(f"v{v.major}", PALETTE[v.colour])
    gates = "".join(
        f'<li class="gate {"open" if g.open else "closed"}" data-version="{_e(g.version)}" '
        f'data-count="{g.count}" data-declared="{g.declared}" '
        f'data-unattributed="{g.unattributed}"><span class="swatch" '
        f'style="background:{first.get(g.version, "#888")}"></span>{_e(g.line)}'
        f"{f' ({g.stale} stale declaration(s), not counted)' if g.stale else ''}</li>"
        for g in lo.gates
    )
    alerts = "".join(f'<li class="warn escalation">{_e(x)}</li>' for x in lo.escalations)
    alerts += "".join(f'<li class="warn break">history broken: {_e(b)}</li>' for b in lo.breaks)
    return (
        f'<section class="layer" data-layer="{_e(lo.layer)}"><h2>{_e(lo.layer)}</h2>'
        f"<table>{head}{rows}</table>{timeline_svg(lo, o.now)}"
        f'<h3>Retirement gate</h3><ul class="gates">{gates or "<li>no migration counts yet</li>"}'
        f"</ul>{f'<ul>{alerts}</ul>' if alerts else ''}</section>"
    )


def _broken(q: Mapping[str, Any]) -> str:
    items = [
        f"<b>{_e(b.get('clause'))}</b>: {_e(b.get('measured'))}"
        + (f' <span class="muted">{_e(b.get("message"))}</span>' if b.get("message") else "")
        for b in q.get("broken") or ()
    ]
    return "<br>".join(items) or _e(q.get("reason") or "")


def _quarantine(o: Overview) -> str:
    if not o.quarantined:
        return '<h2>Recently quarantined</h2><p class="muted">none since this worker started</p>'
    rows = "".join(
        f'<tr class="quarantined"><td>{_e(q.get("at"))}</td><td>{_e(q.get("layer"))}</td>'
        f"<td>{_e(q.get('batch_id') or '-')}</td><td>{_e(q.get('reason'))}</td>"
        f'<td class="broken">{_broken(q)}</td>'
        f'<td><a class="map" href="{_e(q.get("link"))}">map</a></td></tr>'
        for q in o.quarantined
    )
    return (
        "<h2>Recently quarantined</h2><table><tr><th>time</th><th>layer</th><th>batch</th>"
        f"<th>reason</th><th>broken clauses: measured</th><th></th></tr>{rows}</table>"
    )


_WORKER_LABELS = (
    ("ready", "ready"),
    ("config_bootstrapped", "config bootstrapped"),
    ("broker", "broker"),
    ("partitions_assigned", "assigned partitions"),
    ("lag_total", "consumer lag (events)"),
    ("events_per_s", "events decided per second (last minute)"),
    ("batches_committed", "events committed"),
    ("transactions_aborted", "transactions aborted"),
    ("seconds_since_poll_loop", "seconds since the poll loop's last beat"),
)


_LEGEND = (
    '<p class="muted legend">Timeline: a bar per version from publication to supersession or '
    "retirement (pale: observing, solid: enforcing); &#9675; published, &#9632; promoted, "
    "&#9671; superseded, &#215; retired (times of the config records). Under each active "
    "major: its readers over time, declared (solid line) and unattributed (dashed), and the "
    "count that gates its retirement. Each version keeps its colour across table, timeline "
    "and gates.</p>"
)


def _worker(o: Overview) -> str:
    rows = []
    for key, label in _WORKER_LABELS:
        if key not in o.worker:
            continue
        value = o.worker[key]
        if isinstance(value, (list, tuple)):
            value = ", ".join(map(str, value)) or "none"
        rows.append(f'<tr data-key="{key}"><th>{_e(label)}</th><td>{_e(value)}</td></tr>')
    return f"<h2>Worker</h2><table>{''.join(rows)}</table>"


def render_fragments(o: Overview) -> dict[str, str]:
    """The HTML of each live section (:data:`SECTIONS`), as the page and the JSON carry it."""
    layers = "".join(_layer(lo, o) for lo in o.layers) or (
        '<p class="muted">no contract on the config topic yet</p>'
    )
    if o.layers:
        layers = _LEGEND + layers
    return {"worker": _worker(o), "layers": layers, "quarantine": _quarantine(o)}


def render_operator_page(
    o: Overview, *, poll_ms: int = 3000, json_path: str = "/overview.json"
) -> str:
    """The whole page at ``o.now``; its script polls ``json_path`` every ``poll_ms``."""
    import json

    parts = render_fragments(o)
    body = "".join(f'<div id="{s}">{parts[s]}</div>' for s in SECTIONS)
    script = _JS % (int(poll_ms), json.dumps(json_path))
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>contract gate: operator page</title><style>{_CSS}</style></head>"
        f'<body data-updated="{_e(o.now.isoformat())}"><span id="status" class="muted">'
        f"rendered {_e(o.now.strftime('%Y-%m-%d %H:%M:%S UTC'))}</span>"
        "<h1>Spatial contract gate: operator page</h1>"
        '<p class="muted noprint">Read-only. Updates every few seconds; reload for a full '
        f'view. JSON: <a href="{_e(json_path)}">{_e(json_path)}</a>, /status, /metrics.</p>'
        f"{body}<script>{script}</script></body></html>"
    )
