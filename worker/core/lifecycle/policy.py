"""Lifecycle policy of DESIGN.md section 5 as pure decisions (no Kafka).

:func:`decide_publish` says what publishing a contract version does given every version
of its layer already on the config topic: a no-op (same key, same digest), a refusal (edit
in place, a number that does not follow the class, a tightening published enforcing) or
the config records to write (the new version and, for an enforcing minor, its superseded
predecessors). :func:`decide_promotion` does the same for ``contract promote``, and
:func:`escalations` lists the warnings of section 5 for ``contract list``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from worker.core._util.durations import readable_duration as _hours
from worker.core.contracts.classify import (
    Classification,
    Difference,
    classify,
    render_classification,
)
from worker.core.model import Contract

__all__ = [
    "ESCALATION_KINDS",
    "LayerLifecycle",
    "PolicyDecision",
    "Published",
    "decide_promotion",
    "decide_publish",
    "escalations",
    "evidence_cycle",
    "expected_version",
    "layer_lifecycles",
]


@dataclass(frozen=True)
class Published:
    """A contract version as its config record describes it (lifecycle and provenance).

    ``supersedes`` holds the ``layer/version`` keys of the earlier revisions the record
    supersedes when applied (:class:`worker.core.lifecycle.registry.Registry`): the supersession
    travels in the new version's own record, one atomic change.
    """

    contract: Contract
    mode: str
    state: str
    change_class: str | None
    differences: tuple[Difference, ...]
    published_at: datetime
    published_by: str
    supersedes: tuple[str, ...] = ()

    @classmethod
    def from_record(cls, contract: Contract, record: Mapping[str, Any]) -> Published:
        """From a decoded ContractRecord (see :func:`worker.io.codec.decode_contract_record`)."""
        return cls(
            contract=contract,
            mode=record["mode"],
            state=record["state"],
            change_class=record.get("change_class"),
            differences=tuple(
                Difference(d["clause"], d["kind"], d["class"], d["reason"])
                for d in record.get("differences") or ()
            ),
            published_at=record["published_at"],
            published_by=record["published_by"],
            supersedes=tuple(record.get("supersedes") or ()),
        )

    def to_record(self) -> dict[str, Any]:
        """The ContractRecord fields (for :func:`worker.io.codec.encode_contract_record`)."""
        c = self.contract
        return {
            "layer": c.layer,
            "version": c.version,
            "document": c.text,
            "digest": c.digest,
            "mode": self.mode,
            "state": self.state,
            "change_class": self.change_class,
            "differences": [
                {"clause": d.clause, "kind": d.kind, "class": d.class_, "reason": d.reason}
                for d in self.differences
            ],
            "published_at": self.published_at,
            "published_by": self.published_by,
            "changelog": c.changelog,
            "supersedes": list(self.supersedes),
        }


@dataclass(frozen=True)
class PolicyDecision:
    """The outcome of a lifecycle action.

    ``action`` is ``write`` | ``noop`` | ``refuse``; ``writes`` are the records to produce,
    in order: the new or promoted version first, its ``supersedes`` naming the revisions it
    supersedes (a worker applies the supersession with this one record), then a
    ``superseded`` record for each of them (their own keys then say so too, so the state
    outlives the superseding record, and readers of the earlier schema learn it);
    ``message`` is readable text (several lines: the class and differences, then what
    happens).
    """

    action: str
    message: str
    classification: Classification | None = None
    predecessor: Published | None = None
    writes: tuple[Published, ...] = ()


def _newest(versions: Iterable[Published]) -> Published | None:
    return max(versions, key=lambda p: (p.contract.major, p.contract.minor), default=None)


def expected_version(change_class: str, predecessor: Contract, known: Sequence[Published]) -> str:
    """The version number a change of ``change_class`` after ``predecessor`` must carry.

    Major -> the next major after every known major (``v8.0``); tightening, minor (and a
    ``none`` change of spelling) -> the predecessor's major, next minor (``v7.1``).
    """
    if change_class == "major":
        top = max([p.contract.major for p in known] + [predecessor.major])
        return f"v{top + 1}.0"
    return f"v{predecessor.major}.{predecessor.minor + 1}"


def _supersede(
    known: Sequence[Published], major: int, below_minor: int, except_key: str
) -> tuple[Published, ...]:
    return tuple(
        replace(p, state="superseded")
        for p in sorted(known, key=lambda p: p.contract.minor)
        if p.state == "active"
        and p.contract.major == major
        and p.contract.minor < below_minor
        and p.contract.key != except_key
    )


def _supersedes(layer: Sequence[Published], new: Contract) -> tuple[str, ...]:
    """Every earlier revision of ``new``'s major that is not retired, oldest first.

    Cumulative (a v7.2 names v7.0 as well as v7.1), so the supersession stays whole when
    log compaction or a tombstone removes an intermediate revision's record.
    """
    return tuple(
        p.contract.key
        for p in sorted(layer, key=lambda p: p.contract.minor)
        if p.state != "retired"
        and p.contract.major == new.major
        and p.contract.minor < new.minor
        and p.contract.key != new.key
    )


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
                )
            return PolicyDecision(
                "noop", f"{new.key} is already published with this document (no-op)"
            )
        return PolicyDecision(
            "refuse",
            f"{new.key} is already published with another document (digest "
            f"{same.contract.digest[:12]}, this file {new.digest[:12]}): edit in place "
            "refused; give the change a new version number",
        )
    # a revision is classified against the newest revision of its own major (during an
    # overlap the older major can still get a v1.2 after v2.0); a version of a major not
    # yet published, against the newest version of the layer
    own_major = [p for p in layer if p.contract.major == new.major]
    newest_own = _newest(own_major)
    # retirement retires a major's newest revision; the older ones stay superseded (a
    # fresh-user session revived v1 as v1.2 after v1.0 superseded and v1.1 retired)
    if newest_own is not None and newest_own.state == "retired":
        live = sorted({f"v{p.contract.major}" for p in layer if p.state == "active"})
        return PolicyDecision(
            "refuse",
            f"{new.key}: major v{new.major} of layer {new.layer} is retired (no consumer "
            f"reads against it any more); a retired major is not revised: publish the change "
            f"as a revision of the current major ({', '.join(live) or 'none active'}) or as a "
            "new major",
        )
    # a new major follows the newest version still in force (a retired major is no one's
    # predecessor: after v2 was retired beside v1, v3.0 was classified against v2.0)
    predecessor = (
        _newest(own_major) or _newest(p for p in layer if p.state != "retired") or _newest(layer)
    )
    if predecessor is None:
        record = Published(new, mode, "active", None, (), now, published_by)
        return PolicyDecision(
            "write",
            f"{new.key}: first version of layer {new.layer}, published {mode}"
            + _unchecked_warning(new, mode, layer),
            writes=(record,),
        )
    result = classify(predecessor.contract, new)
    head = render_classification(result, f"{predecessor.contract.version} -> {new.version}")
    numbering_class = "minor" if result.class_ == "none" else result.class_
    want = expected_version(numbering_class, predecessor.contract, layer)

    def refuse(why: str) -> PolicyDecision:
        return PolicyDecision("refuse", f"{head}\nrefused: {why}", result, predecessor)

    if new.version != want:
        return refuse(
            f"a {numbering_class} change must be {want}, not {new.version} "
            f"(after {predecessor.contract.version})"
        )
    if result.class_ == "tightening" and mode != "observing":
        return refuse(
            "a tightening must be published --mode observing, then promoted with "
            "`contract-gate contract promote` after one cadence cycle of evidence"
        )
    record = Published(new, mode, "active", result.class_, result.differences, now, published_by)
    writes: tuple[Published, ...] = (record,)
    if result.class_ in ("minor", "none") and mode == "enforcing":
        enforcing = _newest(
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
                    "publish it --mode observing and promote it"
                )
        superseded = _supersede(layer, new.major, new.minor, new.key)
        writes = (replace(record, supersedes=_supersedes(layer, new)), *superseded)
        tail = (
            f"published {mode}; supersedes {', '.join(p.contract.version for p in superseded)}"
            if superseded
            else f"published {mode}"
        )
        trials = [p.contract.version for p in superseded if p.mode == "observing"]
        if trials:
            # said outright: superseding ends an observing trial, and its evidence with it
            tail += (
                f"\nnote: {', '.join(trials)} {'was' if len(trials) == 1 else 'were'} observing "
                f"(a change on trial) and {'is' if len(trials) == 1 else 'are'} no longer "
                f"evaluated; to go on trialling it, publish it again on top of {new.version} "
                "with --mode observing"
            )
    elif result.class_ == "major":
        old = [p.contract.version for p in layer if p.state == "active"]
        tail = f"published {mode}; overlap begins with {', '.join(old) or 'no active version'}"
        tail += _shared_gate_warning(new, mode, layer, result)
    else:
        tail = f"published {mode}"
    tail += _unchecked_warning(new, mode, layer)
    return PolicyDecision("write", f"{head}\n{new.key}: {tail}", result, predecessor, writes)


def _unchecked_warning(new: Contract, mode: str, layer: Sequence[Published]) -> str:
    """The warning for an observing version of a layer with no enforcing version in force:
    its batches are admitted whatever they measure (a fresh-user session found a layer
    of one observing version admitting a broken batch without a word at publish)."""
    enforcing = [p for p in layer if p.state == "active" and p.mode == "enforcing"]
    if mode != "observing" or enforcing:
        return ""
    return (
        f"\nwarning: layer {new.layer} has no enforcing version: every batch is admitted, "
        f"measured by {new.version} but never quarantined for it, until an enforcing version "
        f"is published (or {new.version} promoted)"
    )


def _shared_gate_warning(
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
        f"\nwarning: {new.version} enforces beside {', '.join(others)} on the shared admitted "
        f"topic, where a batch must pass both: {what} will be quarantined from now on; "
        "publish a major --mode observing and promote it, or give the layer "
        "`read_paths: per_major` so each major gates its own topic"
    )


def decide_promotion(
    key: str,
    *,
    known: Sequence[Published],
    span_s: float,
    confirmed: bool,
) -> PolicyDecision:
    """Promote the observing version ``key`` to enforcing (section 5).

    Refused unless it is active and observing and its evidence ``span_s`` covers at least
    one cadence cycle; ``confirmed`` False returns ``refuse`` asking for ``--yes``. On
    promotion the version is written enforcing and the active earlier revisions of its
    major are written superseded.
    """
    target = next((p for p in known if p.contract.key == key), None)
    if target is None:
        return PolicyDecision("refuse", f"{key} is not published")
    c = target.contract
    if target.state != "active":
        return PolicyDecision(
            "refuse", f"{key} is {target.state}; only an active version can be promoted"
        )
    if target.mode == "enforcing":
        return PolicyDecision("noop", f"{key} is already enforcing (no-op)")
    cycle = evidence_cycle(c, known)
    if span_s < cycle.cadence_s:
        missing = cycle.cadence_s - span_s
        whose = (
            ""
            if cycle is c
            else f", the cadence of {cycle.version}, which it would replace ({c.version}'s own "
            f"is {c.cadence})"
        )
        return PolicyDecision(
            "refuse",
            f"{key}: observing evidence spans {_hours(span_s)}, shorter than one cadence cycle "
            f"({cycle.cadence} = {_hours(cycle.cadence_s)}{whose}); {_hours(missing)} missing",
        )
    if not confirmed:
        return PolicyDecision(
            "refuse", f"{key}: promotion not confirmed (answer yes, or pass --yes)"
        )
    layer = [p for p in known if p.contract.layer == c.layer]
    superseded = _supersede(layer, c.major, c.minor, key)
    promoted = replace(target, mode="enforcing", supersedes=_supersedes(layer, c))
    names = ", ".join(p.contract.version for p in superseded)
    return PolicyDecision(
        "write",
        f"{key} promoted to enforcing" + (f"; supersedes {names}" if names else ""),
        predecessor=target,
        writes=(promoted, *superseded),
    )


def evidence_cycle(new: Contract, known: Sequence[Published]) -> Contract:
    """The version whose cadence cycle the evidence for promoting ``new`` must span:
    ``new`` itself, or the active enforcing revision of its major with the longest cadence
    when that is longer.

    A tightening that also shortens its own ``cadence`` (a minor edit on its own) must not
    shorten the observation that justifies it: six hours of evidence are needed to tighten
    a layer that arrives every six hours, whatever the new version says (found by a
    fresh-user session: ``cadence: PT20S`` in v1.1 promoted it after 26 s).
    """
    enforcing = [
        p.contract
        for p in known
        if p.contract.layer == new.layer
        and p.contract.major == new.major
        and p.contract.key != new.key
        and p.mode == "enforcing"
        and p.state == "active"
    ]
    longest = max(enforcing, key=lambda c: c.cadence_s, default=None)
    return longest if longest is not None and longest.cadence_s > new.cadence_s else new


@dataclass(frozen=True)
class LayerLifecycle:
    """The escalation figures of one layer at ``now`` (DESIGN.md section 5).

    ``overlap_age_cycles`` is the age of an open major overlap (several active majors) in
    cadence cycles of the newest major, counted from its first publication; None without
    an overlap. ``escalations`` holds the kinds that fire: ``active_versions`` (more than
    two active versions, a stalled migration), ``overlap_age`` (overlap older than two
    cycles).
    """

    layer: str
    active: tuple[str, ...]
    majors: tuple[int, ...]
    overlap_age_cycles: float | None

    @property
    def escalations(self) -> tuple[str, ...]:
        kinds = []
        if len(self.active) > 2:
            kinds.append("active_versions")
        if self.overlap_age_cycles is not None and self.overlap_age_cycles > 2:
            kinds.append("overlap_age")
        return tuple(kinds)


#: The escalation kinds of :attr:`LayerLifecycle.escalations`.
ESCALATION_KINDS = ("active_versions", "overlap_age")


def layer_lifecycles(known: Sequence[Published], now: datetime) -> list[LayerLifecycle]:
    """:class:`LayerLifecycle` of every layer with an active version, sorted by layer."""
    out = []
    for layer in sorted({p.contract.layer for p in known}):
        active = [p for p in known if p.contract.layer == layer and p.state == "active"]
        if not active:
            continue
        majors = sorted({p.contract.major for p in active})
        age = None
        if len(majors) > 1:
            newest = [p for p in active if p.contract.major == majors[-1]]
            opened = min(p.published_at for p in newest)
            cadence_s = max(p.contract.cadence_s for p in newest)
            age = (now - opened).total_seconds() / cadence_s
        out.append(
            LayerLifecycle(layer, tuple(p.contract.version for p in active), tuple(majors), age)
        )
    return out


def escalations(known: Sequence[Published], now: datetime) -> list[str]:
    """Section 5 escalations: more than two active versions on a layer (a stalled
    migration); an overlap of majors older than two cadence cycles."""
    out = []
    for lc in layer_lifecycles(known, now):
        if "active_versions" in lc.escalations:
            names = ", ".join(lc.active)
            out.append(
                f"{lc.layer}: {len(lc.active)} active versions ({names}): a stalled migration"
            )
        if "overlap_age" in lc.escalations:
            out.append(
                f"{lc.layer}: overlap of v{', v'.join(map(str, lc.majors))} open for "
                f"{lc.overlap_age_cycles:.1f} cadence cycles (more than two)"
            )
    return out
