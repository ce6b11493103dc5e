"""The compaction-proof history of a layer's contracts on ``gis.contracts`` (issue 30), pure.

Keys (every one written once, so log compaction, which keeps the newest record of every
key, removes nothing that a worker depends on):

* ``layer/version/<digest>``: the **document** record (the YAML text, the mode it was
  published in, its change class, the revisions it supersedes);
* ``layer/version/<digest>/<mode>-<state>``: a **state** record of that document (a
  promotion, a supersession, a retirement): its document text is empty and its ``digest``
  names the document it changes;
* ``layer/version`` and ``layer/version/<digest>`` with no ``record_kind``: **legacy**
  records (document and state in one, rewritten on each change), still read.

Every new record also names the key of the layer's previous record (``builds_on``). The
view of a layer is a function of the *latest record under each key* alone, never of their
order: a worker that followed the whole history and a fresh one that bootstraps from the
compacted topic hold the same versions and the same breaks. The history of a layer is
**broken** (the worker fails closed: every batch of it is quarantined,
``contract_history_broken``) when a key holds a tombstone or a record that is refused, a
state record names a document that is not on the topic, a record builds on a key that
holds no valid record, or one version has two documents. A break heals when a valid
record is written under the key again (``contract publish`` of the genuine file).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from worker.core._util.text import clip
from worker.core.contracts.parse import parse_contract
from worker.core.contracts.supersession import supersedes_of
from worker.core.errors import ContractGateError
from worker.core.model import ActiveVersion, Contract

__all__ = [
    "Entry",
    "HistoryKey",
    "LayerView",
    "active_version_from_record",
    "document_key",
    "entry_of",
    "layer_view",
    "parse_history_key",
    "state_key",
]

_KEY = re.compile(
    r"(?P<layer>[A-Za-z0-9._-]{1,128})/(?P<version>v\d{1,9}\.\d{1,9})"
    r"(?:/(?P<digest>[0-9a-f]{64})(?:/(?P<mode>observing|enforcing)-"
    r"(?P<state>active|superseded|retired))?)?"
)
#: Order of lifecycle states: a version is in the furthest state any record of it says.
_STATE_RANK = {"active": 0, "superseded": 1, "retired": 2}
_MODE_RANK = {"observing": 0, "enforcing": 1}


@dataclass(frozen=True)
class HistoryKey:
    """A config key of the history's shape (:func:`parse_history_key`)."""

    layer: str
    version: str
    digest: str | None
    mode: str | None
    state: str | None

    @property
    def vkey(self) -> str:
        """``layer/version``."""
        return f"{self.layer}/{self.version}"


def parse_history_key(key: str) -> HistoryKey | None:
    """``layer/version[/digest[/mode-state]]`` split, None for any other key (at most
    128 characters of layer name, a 64-hex sha256 digest)."""
    m = _KEY.fullmatch(key)
    if m is None:
        return None
    return HistoryKey(m["layer"], m["version"], m["digest"], m["mode"], m["state"])


def document_key(vkey: str, digest: str) -> str:
    """The key of a document record: ``layer/version/<digest>``."""
    return f"{vkey}/{digest}"


def state_key(vkey: str, digest: str, mode: str, state: str) -> str:
    """The key of a state record: ``layer/version/<digest>/<mode>-<state>``."""
    return f"{vkey}/{digest}/{mode}-{state}"


@dataclass(frozen=True)
class Entry:
    """The latest record under one history key, as the registry keeps it.

    ``kind`` is ``document`` | ``state`` | ``legacy`` | ``bad`` (a tombstone or a refused
    record: ``problem`` says which). ``version`` is the parsed document with the mode and
    state its record gives (document and legacy records); ``digest``, ``mode`` and
    ``state`` are those of the record (for a state record: of the document it changes).
    ``supersedes`` is the record's raw field (checked when the layer's view is built),
    ``record`` the decoded record (provenance for ``contract list``).
    """

    key: str
    kind: str
    vkey: str
    digest: str | None = None
    mode: str | None = None
    state: str | None = None
    version: ActiveVersion | None = None
    supersedes: tuple[str, ...] = ()
    builds_on: str | None = None
    record: Mapping[str, Any] | None = None
    problem: str | None = None


@dataclass(frozen=True)
class LayerView:
    """What the latest records of one layer say.

    ``versions``: ``layer/version`` -> the version in the furthest state its records give
    (before supersession); ``supersedes``: ``layer/version`` -> the earlier revisions its
    enforcing records supersede; ``documents``: ``layer/version`` -> the document entry;
    ``breaks``: one readable line per break (empty: the history is whole); ``missing``: the
    keys that need a valid record again for the history to be whole.
    """

    versions: Mapping[str, ActiveVersion]
    supersedes: Mapping[str, tuple[str, ...]]
    documents: Mapping[str, Entry]
    breaks: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()


def _rank(mode: str | None, state: str | None) -> tuple[int, int]:
    return _STATE_RANK.get(state or "", 0), _MODE_RANK.get(mode or "", 0)


def layer_view(entries: Iterable[Entry]) -> LayerView:
    """The :class:`LayerView` of one layer's entries (the latest record of each key).

    Order-free: the entries may come in any order. Two documents for one version keep
    neither (the version is left out, the layer broken): the worker cannot tell the
    genuine one from the topic.
    """
    entries = list(entries)
    valid = {e.key: e for e in entries if e.kind != "bad"}
    breaks: list[str] = []
    missing: set[str] = set()
    for e in sorted((e for e in entries if e.kind == "bad"), key=lambda e: e.key):
        breaks.append(f"{e.key}: {e.problem}")
        missing.add(e.key)
    docs: dict[str, dict[str, Entry]] = {}
    for e in valid.values():
        if e.kind in ("document", "legacy") and e.digest is not None:
            docs.setdefault(e.vkey, {})[e.digest] = e
    for vkey, by_digest in sorted(docs.items()):
        if len(by_digest) > 1:
            digests = " and ".join(d[:12] for d in sorted(by_digest))
            breaks.append(
                f"{vkey}: two documents (digests {digests}): a published version is never "
                "edited, and which one is genuine cannot be told from the topic"
            )
    states: dict[tuple[str, str], list[Entry]] = {}
    for e in sorted(valid.values(), key=lambda e: e.key):
        if e.kind == "state" and e.digest is not None:
            if e.digest not in docs.get(e.vkey, {}):
                breaks.append(
                    f"{e.key}: a {e.mode}/{e.state} record of {e.vkey} digest {e.digest[:12]}, "
                    "whose document is not on the topic"
                )
                missing.add(document_key(e.vkey, e.digest))
            states.setdefault((e.vkey, e.digest), []).append(e)
        if e.builds_on is not None and e.builds_on not in valid:
            breaks.append(f"{e.key} builds on {clip(e.builds_on, 240)}, which is not on the topic")
            if parse_history_key(e.builds_on) is not None:
                missing.add(e.builds_on)
    versions: dict[str, ActiveVersion] = {}
    supersedes: dict[str, tuple[str, ...]] = {}
    for vkey, by_digest in docs.items():
        if len(by_digest) != 1:
            continue
        ((digest, doc),) = by_digest.items()
        assert doc.version is not None
        records = [doc, *states.get((vkey, digest), [])]
        furthest = max(records, key=lambda e: _rank(e.mode, e.state))
        versions[vkey] = replace(
            doc.version,
            mode=furthest.mode or doc.version.mode,  # type: ignore[arg-type]
            state=furthest.state or doc.version.state,  # type: ignore[arg-type]
        )
        supersede: list[str] = []
        for e in records:
            if e.mode != "enforcing" or not e.supersedes:
                continue
            try:
                supersede += supersedes_of(list(e.supersedes), doc.version.contract, e.key)
            except ContractGateError as exc:
                breaks.append(f"{e.key}: {clip(str(exc), 300)}")
                missing.add(e.key)
        if supersede:
            supersedes[vkey] = tuple(dict.fromkeys(supersede))
    documents = {vkey: next(iter(d.values())) for vkey, d in docs.items() if len(d) == 1}
    return LayerView(versions, supersedes, documents, tuple(breaks), tuple(sorted(missing)))


def active_version_from_record(
    record: Mapping[str, Any], *, source: str, parsed: Contract | None = None
) -> ActiveVersion:
    """Build the :class:`ActiveVersion` a decoded ContractRecord describes.

    ``parsed`` is the record's document already parsed (the config-topic reader parses it
    under a time budget); None parses it here.

    Raises
    ------
    ContractError
        When the document is invalid or its digest differs from the record's digest.
    """
    from worker.core.errors import ContractError

    contract = parsed or parse_contract(record["document"], source=source)
    if record.get("digest") and record["digest"] != contract.digest:
        raise ContractError(
            f"{source}: record digest {record['digest'][:12]} does not match its document "
            f"(digest {contract.digest[:12]}); republish with `contract-gate contract publish`"
        )
    return ActiveVersion(contract=contract, mode=record["mode"], state=record["state"])


def entry_of(
    key: str,
    hk: HistoryKey,
    record: Mapping[str, Any],
    parsed: Contract | None,
    source: str,
) -> tuple[Entry, str | None]:
    """The :class:`Entry` a decoded record under the history key ``hk`` makes, and the
    reason when it is refused (``key_mismatch``, ``invalid_contract``): refused records
    are ``bad`` entries, which break the layer."""
    kind = record.get("record_kind")
    common = {
        "supersedes": tuple(record.get("supersedes") or ()),
        "builds_on": record.get("builds_on"),
        "record": record,
    }
    if kind == "state":
        same = (record.get("layer"), record.get("version"), record.get("digest")) == (
            hk.layer,
            hk.version,
            hk.digest,
        ) and (record.get("mode"), record.get("state")) == (hk.mode, hk.state)
        if hk.mode is None or not same:
            why = f"{source}: a state record whose fields do not match its key"
            return Entry(key, "bad", hk.vkey, problem=why), "key_mismatch"
        return Entry(
            key,
            "state",
            hk.vkey,
            hk.digest,
            hk.mode,
            hk.state,
            **common,  # type: ignore[arg-type]
        ), None
    if kind not in (None, "document") or hk.mode is not None or (kind and not hk.digest):
        why = f"{source}: record_kind {clip(str(kind), 40)!r} does not fit its key"
        return Entry(key, "bad", hk.vkey, problem=why), "key_mismatch"
    named = (record.get("layer"), record.get("version"))
    if named != (hk.layer, hk.version):  # what `contract list` and the page show
        shown = f"{clip(str(named[0]), 80)}/{clip(str(named[1]), 40)}"
        why = f"{source}: the record's layer/version fields {shown} do not match its key"
        return Entry(key, "bad", hk.vkey, problem=why), "key_mismatch"
    try:
        version = active_version_from_record(record, source=source, parsed=parsed)
    except ContractGateError as exc:
        return Entry(key, "bad", hk.vkey, problem=clip(str(exc), 400)), "invalid_contract"
    c = version.contract
    try:
        supersedes_of(record.get("supersedes"), c, source)
    except ContractGateError as exc:
        return Entry(key, "bad", hk.vkey, problem=clip(str(exc), 400)), "invalid_contract"
    if c.key != hk.vkey or (hk.digest and hk.digest != c.digest):
        why = f"{source}: key does not match the document's layer/version {c.key}"
        return Entry(key, "bad", hk.vkey, problem=why), "key_mismatch"
    return Entry(
        key,
        "document" if kind else "legacy",
        hk.vkey,
        c.digest,
        version.mode,
        version.state,
        version,
        **common,  # type: ignore[arg-type]
    ), None
