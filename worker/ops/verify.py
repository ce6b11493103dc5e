"""``contract-gate verify overlap LAYER``: the overlap mechanism checked on a live cluster.

Three checks (issue 5), each ``pass``, ``fail``, ``not_applicable`` (the situation does
not exist) or ``inconclusive`` (it exists but there is no evidence yet: not applicable yet),
with the reason and the figures it rests on:

* **identical twin**: an active version whose clauses equal another active version's
  (only differences of class ``none`` or of the document, or the same digest of the
  clause list: name, kind, on_break and
  parameters; descriptions, changelog and owner do not evaluate anything) but with another
  version or mode, at least one of the two observing. Over the batches *both* evaluated
  (the last evaluation of each batch, from the evaluations topic), the two must show the
  same attainment and judge no batch differently. No batch evaluated by both yet is
  inconclusive: nothing was shown either way.
* **stricter observing**: an observing version that is a *tightening* of an enforcing one
  (:func:`worker.core.contracts.classify.classify`). It passes when it recorded breaches on batches
  that
  were admitted (batch id on the admitted topic) and no quarantine is attributable to it:
  no quarantined batch it broke whose enforcing evaluations all passed, and no quarantine
  reason naming it. An attributable quarantine fails; no breach on an admitted batch yet
  (the stricter version never fired on one) is inconclusive.
* **undeclared reader**: every consumer group with committed offsets on the admitted topic
  that never declared for the layer (the gate's own groups excluded) must be counted, as
  unattributed, against the layer's oldest active version in the migration view
  (:func:`worker.control.attribution.migration_view`, the view ``consumers status`` and the worker's
  gauges use).

The checks are pure functions of plain values; :func:`verify_overlap` reads the topics
and the admin API and runs them. Exit codes of the command: 0 when every applicable check
passes (inconclusive ones are not applicable yet), 1 otherwise, 2 on errors.
"""

from __future__ import annotations

from typing import Any

from worker.core.errors import ContractGateError
from worker.core.lifecycle.overlap import (
    _TITLES,
    STRICTER,
    TWIN,
    CheckResult,
    OverlapReport,
    check_undeclared,
    find_stricter,
    find_twins,
)
from worker.core.lifecycle.overlap_checks import (
    check_major_overlap,
    check_stricter,
    check_twin,
)
from worker.kafka.settings import Settings

__all__ = ["render_report", "report_to_json", "verify_overlap"]


# -- rendering -------------------------------------------------------------------------------


def render_report(report: OverlapReport) -> str:
    """One line per check: status, check, subject, figures; then the result."""
    lines = [
        f"verify overlap {report.layer}: active " + ", ".join(f"{v} {m}" for v, m in report.active)
    ]
    for c in report.checks:
        status = {
            "pass": "PASS",
            "fail": "FAIL",
            "not_applicable": "N/A ",
            "inconclusive": "INCONCLUSIVE",
        }[c.status]
        lines.append(f"  {status}  {_TITLES[c.check]}: {c.subject}: {c.reason}")
    n, ok = len(report.applicable), sum(c.status == "pass" for c in report.applicable)
    pending = len(report.inconclusive)
    if report.result == "inconclusive":
        lines.append(
            f"result: INCONCLUSIVE (nothing verified: no applicable check; {pending} "
            f"inconclusive, {len(report.checks) - pending} not applicable)"
        )
        return "\n".join(lines)
    lines.append(
        f"result: {report.result.upper()} ({ok} of {n} applicable check(s) pass"
        + (f"; {pending} inconclusive, not applicable yet" if pending else "")
        + ")"
    )
    return "\n".join(lines)


def report_to_json(report: OverlapReport) -> dict[str, Any]:
    return {
        "layer": report.layer,
        "active": [{"version": v, "mode": m} for v, m in report.active],
        "checks": [
            {
                "check": c.check,
                "status": c.status,
                "subject": c.subject,
                "reason": c.reason,
                "figures": dict(c.figures),
            }
            for c in report.checks
        ],
        "result": report.result,
        "applicable": len(report.applicable),
        "passed": sum(c.status == "pass" for c in report.applicable),
        "inconclusive": len(report.inconclusive),
    }


# -- against a cluster ----------------------------------------------------------------------


def verify_overlap(settings: Settings, layer: str, *, timeout_s: float = 60.0) -> OverlapReport:
    """Read the config, evaluations, admitted and quarantine topics and the consumer groups,
    and run the three checks on ``layer``.

    Raises
    ------
    ContractGateError
        The layer has no active version.
    BrokerError
        A topic cannot be read to its end, or the admin API does not answer.
    """
    from worker.control.attribution import consumer_groups, migration_view, read_declarations
    from worker.control.publish import read_registry
    from worker.kafka.evaluations import read_evaluations
    from worker.ops.quarantine import read_quarantine
    from worker.ops.replay import read_admitted

    registry = read_registry(settings, timeout_s)
    active = registry.active(layer)
    if not active:
        known = ", ".join(registry.layers()) or "none"
        raise ContractGateError(
            f"layer {layer!r} has no active contract version (layers: {known})",
            field="layer",
            fix="give a layer with an active contract version",
        )
    records = read_evaluations(settings, layer, timeout_s)
    checks: list[CheckResult] = []

    twins = find_twins(active)
    checks += [check_twin(o, t, records) for o, t in twins]
    if not twins:
        checks.append(
            CheckResult(
                TWIN,
                "not_applicable",
                "no twin",
                "no two active versions have the same clauses (an identical observing twin)",
            )
        )

    stricter = find_stricter(active)
    if stricter:
        admitted = read_admitted(settings, layer=layer, timeout_s=timeout_s)
        quarantined: dict[str, set[str]] = {}
        for entry in read_quarantine(settings, layer=layer, timeout_s=timeout_s):
            if entry.batch_id and entry.record is not None:
                named = {r["version"] for r in entry.record["reasons"] if r.get("version")}
                quarantined.setdefault(entry.batch_id, set()).update(named)
        enforcing = [v.contract.version for v in active if v.mode == "enforcing"]
        checks += [
            check_stricter(e, s, records, enforcing, admitted, quarantined) for e, s in stricter
        ]
    else:
        checks.append(
            CheckResult(
                STRICTER,
                "not_applicable",
                "no stricter observing version",
                "no observing version is a tightening of an active enforcing version",
            )
        )

    view = migration_view(settings, registry=registry)
    _existing, reading = consumer_groups(settings)
    declared = {d.consumer for d in read_declarations(settings, timeout_s) if d.layer == layer}
    own = settings.group_id
    undeclared = {
        g for g in reading if g not in declared and g != own and not g.startswith(f"{own}-reader-")
    }
    checks.append(check_undeclared(layer, active[0].contract.version, undeclared, view))
    checks += check_major_overlap(active, records)
    return OverlapReport(layer, tuple((v.contract.version, v.mode) for v in active), tuple(checks))
