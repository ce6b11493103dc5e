"""One self-contained HTML page per batch (``check --html``, ``quarantine show --html``).

The page holds, with no script and nothing fetched at view time:

* an inline SVG map of the batch in the map CRS (the contract CRS: the first crs clause's
  ``expect``, else the batch's declared CRS), north up, features grey, offending features
  coloured by the first clause they broke, each extent region drawn as a dashed outline;
* the verdict of every version and clause in plain words (the clause messages);
* the table of offending features (clause, row index, feature id, measured value).

SVG elements carry classes for tools and tests: ``feature`` (``offender`` too, with
``data-clause`` and ``data-index``), ``region`` (``data-clause``), ``legend``.
Geometries are simplified to a tolerance of 1/2000 of the map's larger side before drawing,
so a 50,000-feature batch stays a page a browser opens.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from worker.core.model import Batch, Contract, Decision
from worker.core.offenders import MAX_OFFENDERS
from worker.io.reports.batch_map import map_crs, map_section
from worker.io.reports.offenders import BrokenClause, broken_clauses, offenders_of_record
from worker.io.reports.text import offender_value

__all__ = ["render_batch_page", "render_record_page"]


def _offender_table(broken: Sequence[BrokenClause]) -> str:
    """The offenders table: the first :data:`MAX_OFFENDERS` of each clause (``check``
    names every one for the map, which the table need not repeat), then how many more."""
    esc = html.escape
    rows = []
    for b in broken:
        named = list(b.offenders.get("features") or [])
        feats = named[:MAX_OFFENDERS]
        for f in feats:
            rows.append(
                f"<tr><td>{esc(b.label)}</td><td>{f.get('index')}</td>"
                f"<td>{esc('' if f.get('id') is None else str(f.get('id')))}</td>"
                f"<td>{esc(offender_value(f.get('value')))}</td></tr>"
            )
        total = b.offenders.get("total") or 0
        if isinstance(total, int) and total > len(feats):
            kept = "every one is on the map" if len(named) >= total else "the first ones are kept"
            rows.append(
                f'<tr><td>{esc(b.label)}</td><td colspan="3">... and {total - len(feats)} more '
                f"({kept})</td></tr>"
            )
    if not rows:
        return "<p>No offending features.</p>"
    measures = "; ".join(f"{b.label}: {b.offenders.get('measure')}" for b in broken)
    return (
        f"<p>Value column: {esc(measures)}.</p><table class=offenders><tr><th>clause</th>"
        "<th>feature (row index)</th><th>feature id</th><th>measured on the feature</th></tr>"
        + "".join(rows)
        + "</table>"
    )


_STYLE = (
    "body{font-family:sans-serif;margin:2em;max-width:1000px}"
    "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;"
    "text-align:left;vertical-align:top}.pass{color:#176317}.break{color:#b00000;"
    "font-weight:bold}.swatch{display:inline-block;width:1em;height:1em;margin-right:.4em;"
    "vertical-align:middle;border:1px solid #222}svg.map{border:1px solid #ccc}"
)


def _page(title: str, verdicts: str, map_html: str, table: str) -> str:
    esc = html.escape
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>
<style>{_STYLE}</style></head><body>
<h1>{esc(title)}</h1>
<h2>Verdicts</h2>
{verdicts}
<h2>Map</h2>
{map_html}
<h2>Offending features</h2>
{table}
</body></html>
"""


def _extent_regions(contracts: Sequence[Contract], label_of: Any) -> list[tuple[str, Any, str]]:
    out = []
    for c in contracts:
        crs_text = next((x.params.get("expect") for x in c.clauses if x.kind == "crs"), None)
        for clause in c.clauses:
            if clause.kind == "extent":
                out.append(
                    (
                        f"{c.version}:{clause.name}",
                        clause.params["region"],
                        clause.params.get("crs") or crs_text or "",
                    )
                )
    return out


def render_batch_page(
    batch: Batch, decision: Decision, contracts: Sequence[Contract], *, title: str = ""
) -> str:
    """The page of ``check --html``: the map, every version's verdict and every clause in
    plain words, the offending features of every broken clause (enforcing and observing)."""
    esc = html.escape
    broken = broken_clauses(decision)
    sections = []
    for v in decision.verdicts:
        if v.passed:
            head = "passed"
        elif v.mode == "enforcing":
            head = "FAILED: this version quarantines the batch"
        else:
            head = "FAILED (observing: measured only, the batch is not held back)"
        items = "".join(
            f'<li class="{c.result}">{"holds" if c.result == "pass" else "BROKEN"}: '
            f"<b>{esc(c.name)}</b> ({esc(c.kind)}): {esc(c.message)}</li>"
            for c in v.clauses
        )
        sections.append(
            f"<h3>{esc(v.layer)} {esc(v.version)} ({esc(v.mode)}): {esc(head)}</h3><ul>{items}</ul>"
        )
    outcome = "admitted" if decision.admitted else "quarantined"
    verdicts = f"<p><b>Decision: the batch is {outcome}.</b></p>" + "".join(sections)
    if decision.diagnoses:
        verdicts += "<p>Likely causes: " + esc("; ".join(decision.diagnoses)) + "</p>"
    crs = map_crs(batch, contracts, [])
    regions = _extent_regions(contracts, None)
    page_title = f"batch {title or batch.batch_id} ({batch.layer}): {outcome}"
    return _page(
        page_title, verdicts, map_section(batch, broken, regions, crs), _offender_table(broken)
    )


def render_record_page(batch: Batch, record: Mapping[str, Any]) -> str:
    """The page of ``quarantine show --html``: the map of the quarantined batch (decoded
    from the record's original event), every reason in plain words, the offenders. The
    extent regions are those the reasons' ``expected`` values name."""
    esc = html.escape
    reasons = list(record.get("reasons") or [])
    broken = offenders_of_record(reasons)
    items = "".join(
        f'<li class="break">{esc(str(r.get("version") or ""))} ({esc(str(r.get("mode") or ""))}) '
        f"<b>{esc(str(r.get('clause') or r.get('code')))}</b>: {esc(str(r.get('message')))}</li>"
        for r in reasons
    )
    verdicts = (
        f"<p><b>Quarantined at {esc(str(record.get('quarantined_at')))} by "
        f"{esc(str(record.get('worker_id')))} ({esc(str(record.get('reason_code')))}).</b></p>"
        f"<ul>{items}</ul>"
    )
    if record.get("diagnoses"):
        verdicts += "<p>Likely causes: " + esc("; ".join(record["diagnoses"])) + "</p>"
    regions = []
    crs_texts = []
    for r in reasons:
        exp = r.get("expected")
        if isinstance(exp, Mapping) and "region" in exp and "min_fraction_inside" in exp:
            regions.append(
                (f"{r.get('version')}:{r.get('clause')}", exp["region"], str(exp.get("crs") or ""))
            )
            if exp.get("crs"):
                crs_texts.append(str(exp["crs"]))
    crs = map_crs(batch, [], crs_texts)
    title = f"quarantined batch {record.get('batch_id') or '-'} ({record.get('layer') or '-'})"
    return _page(title, verdicts, map_section(batch, broken, regions, crs), _offender_table(broken))
