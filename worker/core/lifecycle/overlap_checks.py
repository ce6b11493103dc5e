"""The checks of ``contract-gate verify overlap`` on evaluation records (pure).

Identical twin, stricter observing and major overlap: each returns a
:class:`worker.core.lifecycle.overlap.CheckResult` with its status, reason and figures.
See :mod:`worker.ops.verify` for what each check means and how the topics are read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from worker.core.lifecycle.overlap import (
    MAJOR,
    STRICTER,
    TWIN,
    CheckResult,
    Status,
)

__all__ = [
    "check_major_overlap",
    "check_stricter",
    "check_twin",
    "latest_by_batch",
]

if TYPE_CHECKING:  # the command line imports this module: keep its start-up light
    from worker.core.model import ActiveVersion


def _label(v: ActiveVersion) -> str:
    return f"{v.contract.version} ({v.mode})"


def latest_by_batch(records: Iterable[Mapping[str, Any]], version: str) -> dict[str, bool]:
    """Batch id -> passed, from the last evaluation record of each batch under ``version``
    (a batch consumed again after an aborted transaction counts once)."""
    out: dict[str, bool] = {}
    for r in records:
        if r["version"] == version:
            out[r["batch_id"]] = bool(r["passed"])
    return out


def check_twin(
    original: ActiveVersion, twin: ActiveVersion, records: Sequence[Mapping[str, Any]]
) -> CheckResult:
    """Same attainment, and no batch judged differently, over the batches both evaluated."""
    a = latest_by_batch(records, original.contract.version)
    b = latest_by_batch(records, twin.contract.version)
    common = sorted(set(a) & set(b))
    n = len(common)
    passed_a = sum(a[x] for x in common)
    passed_b = sum(b[x] for x in common)
    differ = [x for x in common if a[x] != b[x]]
    subject = f"{_label(twin)} twin of {_label(original)}"
    figures: dict[str, Any] = {
        "original": original.contract.version,
        "original_mode": original.mode,
        "twin": twin.contract.version,
        "twin_mode": twin.mode,
        "batches_both": n,
        "original_passed": passed_a,
        "twin_passed": passed_b,
        "original_attainment": passed_a / n if n else None,
        "twin_attainment": passed_b / n if n else None,
        "judged_differently": differ,
    }
    if not n:
        return CheckResult(
            TWIN,
            "inconclusive",
            subject,
            f"not applicable yet: no batch evaluated by both yet ({len(a)} by "
            f"{original.contract.version}, {len(b)} by {twin.contract.version}); publish "
            "batches and run again",
            figures,
        )
    reason = (
        f"{n} batch(es) evaluated by both; attainment {passed_a / n:.3f} ({passed_a}/{n}) "
        f"vs {passed_b / n:.3f} ({passed_b}/{n}); {len(differ)} judged differently"
        + (f": {', '.join(differ[:10])}" if differ else "")
    )
    return CheckResult(
        TWIN, "fail" if differ or passed_a != passed_b else "pass", subject, reason, figures
    )


def check_stricter(
    enforcing: ActiveVersion,
    stricter: ActiveVersion,
    records: Sequence[Mapping[str, Any]],
    enforcing_versions: Sequence[str],
    admitted: Iterable[str],
    quarantined: Mapping[str, Iterable[str]],
) -> CheckResult:
    """Breaches recorded on admitted batches, no quarantine attributable to the version.

    Parameters
    ----------
    enforcing, stricter : ActiveVersion
        The enforcing version and its observing tightening.
    records : sequence of mapping
        Evaluation records of the layer.
    enforcing_versions : sequence of str
        Every active enforcing version of the layer.
    admitted : iterable of str
        Batch ids on the admitted topic.
    quarantined : mapping of str to iterable of str
        Batch id on the quarantine topic -> the versions its reasons name.
    """
    mine = latest_by_batch(records, stricter.contract.version)
    enforced = {v: latest_by_batch(records, v) for v in enforcing_versions}
    admitted = set(admitted)
    breaches = sorted(b for b, ok in mine.items() if not ok)
    breaches_admitted = [b for b in breaches if b in admitted]
    breaches_quarantined = [b for b in breaches if b in quarantined and b not in admitted]
    attributable = sorted(
        b
        for b in mine
        if b in quarantined
        and b not in admitted
        and (
            stricter.contract.version in set(quarantined[b])
            or (not mine[b] and all(e.get(b, True) for e in enforced.values()))
        )
    )
    by_enforcing = [b for b in breaches_quarantined if b not in attributable]
    undecided = [b for b in breaches if b not in admitted and b not in quarantined]
    subject = f"{_label(stricter)}, a tightening of {_label(enforcing)}"
    figures: dict[str, Any] = {
        "stricter": stricter.contract.version,
        "enforcing": enforcing.contract.version,
        "evaluated": len(mine),
        "breaches": len(breaches),
        "breaches_admitted": len(breaches_admitted),
        "breaches_quarantined_by_enforcing": len(by_enforcing),
        "breaches_undecided": len(undecided),
        "quarantines_attributable": attributable,
        "admitted_with_breach": breaches_admitted,
    }
    reason = (
        f"{len(mine)} batch(es) evaluated, {len(breaches)} breach(es), "
        f"{len(breaches_admitted)} of them admitted, "
        f"{figures['breaches_quarantined_by_enforcing']} quarantined by an enforcing version"
        + (f", {len(undecided)} not decided yet" if undecided else "")
        + f"; {len(attributable)} quarantine(s) attributable to {stricter.contract.version}"
        + (f": {', '.join(attributable[:10])}" if attributable else "")
    )
    if attributable:
        status: Status = "fail"
    elif not breaches_admitted:
        status = "inconclusive"
        reason = (
            f"not applicable yet: no breach on an admitted batch recorded yet, "
            f"{stricter.contract.version} has not fired on one; {reason}"
        )
    else:
        status = "pass"
    return CheckResult(STRICTER, status, subject, reason, figures)


def check_major_overlap(
    active: Sequence[ActiveVersion], records: Sequence[Mapping[str, Any]]
) -> list[CheckResult]:
    """During a major overlap both majors are evaluated on every batch, each with its own
    attainment: for the newest active revision of the newest major against the newest
    active revision of each older major, every batch evaluated by either since the newer
    one's first evaluation (``evaluated_at``) must be evaluated by both.

    Not applicable with one major active; inconclusive while the newer major has evaluated
    no batch. Figures: each version's batches, passes and attainment over the overlap, and
    the batch ids evaluated by one only.
    """
    newest: dict[int, ActiveVersion] = {}
    for v in active:
        known = newest.get(v.contract.major)
        if known is None or v.contract.minor > known.contract.minor:
            newest[v.contract.major] = v
    majors = sorted(newest)
    if len(majors) < 2:
        return [
            CheckResult(
                MAJOR,
                "not_applicable",
                "no major overlap",
                "one major version is active (an overlap needs two)",
            )
        ]
    new = newest[majors[-1]]
    out = []
    new_at = [r.get("evaluated_at") for r in records if r["version"] == new.contract.version]
    since = min((t for t in new_at if t is not None), default=None)
    for major in majors[:-1]:
        old = newest[major]
        subject = f"{_label(old)} and {_label(new)}"
        a = latest_by_batch(records, old.contract.version)
        b = latest_by_batch(records, new.contract.version)
        if not b:
            out.append(
                CheckResult(
                    MAJOR,
                    "inconclusive",
                    subject,
                    f"not applicable yet: {new.contract.version} has evaluated no batch; "
                    "publish batches and run again",
                    {"old": old.contract.version, "new": new.contract.version},
                )
            )
            continue
        during = {
            r["batch_id"]
            for r in records
            if r["version"] == old.contract.version
            and since is not None
            and r.get("evaluated_at") is not None
            and r["evaluated_at"] >= since
        } | set(b)
        only_old = sorted(during - set(b))
        only_new = sorted(during - set(a))
        both = sorted(during & set(a) & set(b))
        n = len(both)
        pa_, pb = sum(a[x] for x in both), sum(b[x] for x in both)
        figures = {
            "old": old.contract.version,
            "new": new.contract.version,
            "batches_both": n,
            "old_passed": pa_,
            "new_passed": pb,
            "old_attainment": pa_ / n if n else None,
            "new_attainment": pb / n if n else None,
            "only_old": only_old,
            "only_new": only_new,
        }
        att = (
            f"attainment {old.contract.version} {pa_ / n:.3f} ({pa_}/{n}), "
            f"{new.contract.version} {pb / n:.3f} ({pb}/{n})"
            if n
            else "no batch evaluated by both"
        )
        missing = len(only_old) + len(only_new)
        reason = f"{n} batch(es) of the overlap evaluated by both; {att}" + (
            f"; {len(only_old)} evaluated by {old.contract.version} only, {len(only_new)} by "
            f"{new.contract.version} only: " + ", ".join((only_old + only_new)[:10])
            if missing
            else ""
        )
        # two enforcing majors on the shared admitted topic: a batch is admitted only when
        # it passes both, so none passing both is an outage, not an overlap (a CRS major
        # quarantined every batch and this check said PASS)
        shared = not any(v.contract.read_paths == "per_major" for v in (old, new))
        gated = shared and old.mode == new.mode == "enforcing"
        figures["passed_both"] = sum(1 for x in both if a[x] and b[x])
        outage = gated and n > 0 and figures["passed_both"] == 0
        if outage:
            reason += (
                f"; none of them passed both enforcing majors, so every batch of the overlap "
                f"was quarantined on the shared admitted topic: make {new.contract.version} "
                "observing until producers move, or give the layer `read_paths: per_major`"
            )
        out.append(
            CheckResult(MAJOR, "fail" if missing or outage else "pass", subject, reason, figures)
        )
    return out
