"""What applying a config record did, in words (pure): :class:`ConfigEvent`, one per
record the :class:`~worker.core.lifecycle.registry.Registry` applies, and
:class:`BrokenLayer`, the answer for a layer whose history is broken, with
:data:`BROKEN_FIX`, the fix named wherever a broken history is reported.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from worker.core._util.text import clip
from worker.core.lifecycle.history import Entry, LayerView
from worker.core.model import ActiveVersion

__all__ = ["BROKEN_FIX", "BrokenLayer", "ConfigEvent", "broken_layer", "installed_event"]

#: The fix named wherever a broken history is reported.
BROKEN_FIX = (
    "republish the genuine document from git with `contract-gate contract publish FILE` "
    "(it writes the missing records again); two documents for one version need the config "
    "topic rebuilt from git, or signed records"
)


@dataclass(frozen=True)
class ConfigEvent:
    """What applying one config record did.

    ``outcome`` is ``added`` | ``updated`` | ``unchanged`` | ``rejected``; ``reason``
    (rejections only) is ``edit_in_place`` | ``invalid_record`` | ``oversized_record`` |
    ``unsigned_record`` | ``bad_signature`` (:mod:`worker.io.signing`) |
    ``invalid_contract`` | ``key_mismatch`` | ``unretired_tombstone`` (a null value for a
    version in force and enforcing) | ``tombstone`` (any other null value under a contract
    key). ``tombstone`` is True for a null value. ``superseded`` lists the
    ``layer/version`` keys this record turned from active to superseded. ``broken`` holds
    the breaks of the layer's history after the record (empty: whole).
    """

    outcome: str
    key: str
    layer: str | None
    message: str
    reason: str | None = None
    version: ActiveVersion | None = None
    tombstone: bool = False
    superseded: tuple[str, ...] = ()
    broken: tuple[str, ...] = ()


class BrokenLayer(tuple[ActiveVersion, ...]):
    """The active versions of a layer whose history is broken: none, and why
    (``history_break``, bounded text naming the first break and the fix)."""

    history_break: str

    def __new__(cls, message: str) -> BrokenLayer:
        made = super().__new__(cls, ())
        made.history_break = message
        return made


def broken_layer(layer: str, breaks: tuple[str, ...]) -> BrokenLayer:
    """The :class:`BrokenLayer` of ``layer``: its first break (and how many more), the fix."""
    more = f" (and {len(breaks) - 1} more)" if len(breaks) > 1 else ""
    return BrokenLayer(
        f"the contract history of layer {clip(layer, 128)} is broken, so every batch "
        f"is quarantined: {clip(breaks[0], 400)}{more}; fix: {BROKEN_FIX}"
    )


def installed_event(
    layer: str,
    entry: Entry,
    message: str,
    reason: str | None,
    tombstone: bool,
    before: Mapping[str, ActiveVersion],
    after: Mapping[str, ActiveVersion],
    view: LayerView,
) -> ConfigEvent:
    """What installing ``entry`` changed: the layer's versions ``before`` and ``after``
    (supersession applied) and its rebuilt ``view``; ``message`` and ``reason`` are those of
    a refused entry."""
    vkey = entry.vkey
    turned = tuple(
        sorted(
            k
            for k, v in after.items()
            if k != vkey and v.state == "superseded" and k in before
            if before[k].state == "active"
        )
    )
    broken = view.breaks
    tail = ""
    if broken and entry.kind == "bad":
        tail = f"; layer {layer} fails closed (contract_history_broken)"
    elif broken:
        tail = f"; layer {layer} fails closed: {clip(broken[0], 200)}"
    if entry.kind == "bad":
        return ConfigEvent(
            "rejected", entry.key, layer, message + tail, reason, before.get(vkey),
            tombstone, broken=broken,
        )  # fmt: skip
    if entry.kind in ("document", "legacy") and vkey not in view.documents:
        return ConfigEvent(
            "rejected",
            entry.key,
            layer,
            f"{entry.key}: edit in place refused: {vkey} has another document{tail}",
            "edit_in_place",
            broken=broken,
        )
    old, now = before.get(vkey), after.get(vkey)
    if turned:
        tail = "; supersedes " + ", ".join(turned) + tail
    if now is None:
        return ConfigEvent("added", entry.key, layer, f"{entry.key} recorded{tail}", broken=broken)
    what = f"{now.mode} {now.state}"
    if old is None:
        return ConfigEvent(
            "added", entry.key, layer, f"{vkey} {what}{tail}", None, now,
            superseded=turned, broken=broken,
        )  # fmt: skip
    if (old.mode, old.state) == (now.mode, now.state) and not turned:
        return ConfigEvent(
            "unchanged", entry.key, layer, f"{vkey} unchanged{tail}", None, now,
            broken=broken,
        )  # fmt: skip
    return ConfigEvent(
        "updated", entry.key, layer, f"{vkey} {old.mode}/{old.state} -> {now.mode}/"
        f"{now.state}{tail}", None, now, superseded=turned, broken=broken,
    )  # fmt: skip
