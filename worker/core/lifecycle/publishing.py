"""Publishing a contract version under the lifecycle policy (docs/design.md section 5), pure.

:func:`decide_publish` says what publishing a contract version does given every version
of its layer already on the config topic: a no-op (same key, same digest), a refusal (edit
in place, a number that does not follow the class, a tightening published enforcing) or
the config records to write (the new version and, for an enforcing minor, its superseded
predecessors). Its message ends with the warnings of a publication: a layer left with no
enforcing version (:func:`unchecked_warning`), a major enforced beside another on a shared
admitted topic (:func:`shared_gate_warning`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from worker.core.contracts.classify import Classification, classify, render_classification
from worker.core.lifecycle.policy import (
    PolicyDecision,
    Published,
    expected_version,
    newest,
    supersede,
    supersession_keys,
)
from worker.core.model import Contract

__all__ = [
    "decide_publish",
    "shared_gate_text",
    "shared_gate_warning",
    "unchecked_text",
    "unchecked_warning",
]


def decide_publish(
    new: Contract,
    *,
    mode: str,
    known: Sequence[Published],
    published_by: str,
    now: datetime,
) -> PolicyDecision:
    """Apply section 5 to publishing ``new`` in ``mode`` given the layer's ``known`` versions.

    ``known`` may hold versions of other layers; they are ignored.
    """
    layer = [p for p in known if p.contract.layer == new.layer]
    same = next((p for p in layer if p.contract.key == new.key), None)
    if same is not None:
        if same.contract.digest == new.digest:
            if same.mode != mode:
                how = (
                    f"`contract-gate contract promote {new.layer} {new.version}`"
                    if mode == "enforcing"
                    else "a new version published observing"
                )
                return PolicyDecision(
                    "refuse",
                    f"{new.key} is already published {same.mode} ({same.state}); publishing "
                    f"cannot change its mode to {mode}: use {how}",
                    field="--mode",
                    fix=f"use {how}",
                )
            return PolicyDecision(
                "noop", f"{new.key} is already published with this document (no-op)"
            )
        return PolicyDecision(
            "refuse",
            f"{new.key} is already published with another document (digest "
            f"{same.contract.digest[:12]}, this file {new.digest[:12]}): edit in place "
            "refused; give the change a new version number",
            field="version",
            fix="give the change a new version number",
        )
    # a revision is classified against the newest revision of its own major (during an
    # overlap the older major can still get a v1.2 after v2.0); a version of a major not
    # yet published, against the newest version of the layer
    own_major = [p for p in layer if p.contract.major == new.major]
    newest_own = newest(own_major)
    # retirement retires a major's newest revision; the older ones stay superseded
    # (v1 was revived as v1.2 after v1.0 superseded and v1.1 retired)
    if newest_own is not None and newest_own.state == "retired":
        live = sorted({f"v{p.contract.major}" for p in layer if p.state == "active"})
        return PolicyDecision(
            "refuse",
            f"{new.key}: major v{new.major} of layer {new.layer} is retired (no consumer "
            f"reads against it any more); a retired major is not revised: publish the change "
            f"as a revision of the current major ({', '.join(live) or 'none active'}) or as a "
            "new major",
            field="version",
            fix="publish it as a revision of the current major "
            f"({', '.join(live) or 'none active'}) or as a new major",
        )
    # a new major follows the newest version still in force (a retired major is no one's
    # predecessor: after v2 was retired beside v1, v3.0 was classified against v2.0)
    predecessor = (
        newest(own_major) or newest(p for p in layer if p.state != "retired") or newest(layer)
    )
    if predecessor is None:
        record = Published(new, mode, "active", None, (), now, published_by)
        first_warned = _present(unchecked_text(new, mode, layer))
        return PolicyDecision(
            "write",
            f"{new.key}: first version of layer {new.layer}, published {mode}"
            + "".join(f"\nwarning: {w}" for w in first_warned),
            writes=(record,),
            warnings=first_warned,
        )
    result = classify(predecessor.contract, new)
    head = render_classification(result, f"{predecessor.contract.version} -> {new.version}")
    numbering_class = "minor" if result.class_ == "none" else result.class_
    want = expected_version(numbering_class, predecessor.contract, layer)

    def refuse(why: str, field: str, fix: str) -> PolicyDecision:
        message = f"{head}\nrefused: {why}"
        return PolicyDecision("refuse", message, result, predecessor, field=field, fix=fix)

    if new.version != want:
        return refuse(
            f"a {numbering_class} change must be {want}, not {new.version} "
            f"(after {predecessor.contract.version})",
            "version",
            f"number the change {want}",
        )
    if result.class_ == "tightening" and mode != "observing":
        return refuse(
            "a tightening must be published --mode observing, then promoted with "
            "`contract-gate contract promote` after one cadence cycle of evidence",
            "--mode",
            "publish it --mode observing, then promote it after one cadence cycle of evidence",
        )
    record = Published(new, mode, "active", result.class_, result.differences, now, published_by)
    writes: tuple[Published, ...] = (record,)
    notes: tuple[str, ...] = ()
    warned: tuple[str, ...] = ()
    if result.class_ in ("minor", "none") and mode == "enforcing":
        enforcing = newest(
            p
            for p in layer
            if p.contract.major == new.major and p.mode == "enforcing" and p.state == "active"
        )
        if enforcing is not None and enforcing is not predecessor:
            behind = classify(enforcing.contract, new)
            if behind.class_ in ("tightening", "major"):
                return refuse(
                    f"as enforcing, {new.version} would enforce a {behind.class_} change against "
                    f"{enforcing.contract.version} (the enforcing revision) without evidence; "
                    "publish it --mode observing and promote it",
                    "--mode",
                    "publish it --mode observing and promote it",
                )
        superseded = supersede(layer, new.major, new.minor, new.key)
        writes = (replace(record, supersedes=supersession_keys(layer, new)), *superseded)
        tail = (
            f"published {mode}; supersedes {', '.join(p.contract.version for p in superseded)}"
            if superseded
            else f"published {mode}"
        )
        notes = _present(_trial_note(new, superseded))
        tail += "".join(f"\nnote: {n}" for n in notes)
    elif result.class_ == "major":
        old = [p.contract.version for p in layer if p.state == "active"]
        tail = f"published {mode}; overlap begins with {', '.join(old) or 'no active version'}"
        warned = _present(shared_gate_text(new, mode, layer, result))
    else:
        tail = f"published {mode}"
    warned = (*warned, *_present(unchecked_text(new, mode, layer)))
    tail += "".join(f"\nwarning: {w}" for w in warned)
    return PolicyDecision(
        "write", f"{head}\n{new.key}: {tail}", result, predecessor, writes, notes, warned
    )


def _present(text: str) -> tuple[str, ...]:
    """``(text,)``, or ``()`` when it is empty."""
    return (text,) if text else ()


def _trial_note(new: Contract, superseded: Sequence[Published]) -> str:
    """The note for observing revisions a publication supersedes (their trial ends, and
    their evidence with it), or empty."""
    trials = [p.contract.version for p in superseded if p.mode == "observing"]
    if not trials:
        return ""
    return (
        f"{', '.join(trials)} {'was' if len(trials) == 1 else 'were'} observing "
        f"(a change on trial) and {'is' if len(trials) == 1 else 'are'} no longer "
        f"evaluated; to go on trialling it, publish it again on top of {new.version} "
        "with --mode observing"
    )


def unchecked_warning(new: Contract, mode: str, layer: Sequence[Published]) -> str:
    """:func:`unchecked_text` as a ``\\nwarning: ...`` line of a message, or empty."""
    text = unchecked_text(new, mode, layer)
    return f"\nwarning: {text}" if text else ""


def shared_gate_warning(
    new: Contract, mode: str, layer: Sequence[Published], result: Classification
) -> str:
    """:func:`shared_gate_text` as a ``\\nwarning: ...`` line of a message, or empty."""
    text = shared_gate_text(new, mode, layer, result)
    return f"\nwarning: {text}" if text else ""


def unchecked_text(new: Contract, mode: str, layer: Sequence[Published]) -> str:
    """The warning for an observing version of a layer with no enforcing version in force:
    its batches are admitted whatever they measure (a layer of one observing version
    admitted a broken batch, and publish said nothing); empty otherwise."""
    enforcing = [p for p in layer if p.state == "active" and p.mode == "enforcing"]
    if mode != "observing" or enforcing:
        return ""
    return (
        f"layer {new.layer} has no enforcing version: every batch is admitted, "
        f"measured by {new.version} but never quarantined for it, until an enforcing version "
        f"is published (or {new.version} promoted)"
    )


def shared_gate_text(
    new: Contract, mode: str, layer: Sequence[Published], result: Classification
) -> str:
    """The warning for a major published enforcing beside another enforcing major of a
    layer without per-major read paths: a batch is then admitted to the shared topic only
    when it passes both (section 3), so a change no batch can satisfy twice (CRS, axis
    order, a tightening inside the major) quarantines batches at once; empty otherwise."""
    from worker.core.lifecycle.read_paths import opts_in

    others = [
        p.contract.version
        for p in layer
        if p.state == "active" and p.mode == "enforcing" and p.contract.major != new.major
    ]
    if mode != "enforcing" or not others or opts_in([new, *(p.contract for p in layer)]):
        return ""
    majors = [d for d in result.differences if d.class_ == "major"]
    tightened = [d.clause for d in result.differences if d.class_ == "tightening"]
    if any(d.kind in ("crs", "axis_order") or "CRS" in d.reason for d in majors):
        what = "its CRS or axis order differs, so no batch can pass both and every batch"
    elif tightened:
        what = (
            f"it also tightens {', '.join(dict.fromkeys(tightened))} without observing "
            "evidence, so batches that pass the old major but not this"
        )
    else:
        what = "a batch that passes one but not the other"
    return (
        f"{new.version} enforces beside {', '.join(others)} on the shared admitted "
        f"topic, where a batch must pass both: {what} will be quarantined from now on; "
        "publish a major --mode observing and promote it, or give the layer "
        "`read_paths: per_major` so each major gates its own topic"
    )
