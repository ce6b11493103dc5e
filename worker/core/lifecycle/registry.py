"""Registry of contract versions per layer, fed by config-topic records (pure, no Kafka).

The worker re-checks the lifecycle policy of DESIGN.md section 5 on every record:

* a record whose document differs (by digest) from the version already known under the
  same ``layer/version`` key is an *edit in place*: ignored, the original stays in force;
* a record that does not decode, whose document fails validation, whose digest does not
  match its document, or whose key does not match its layer/version is rejected;
* a record with the same digest updates the lifecycle (mode, state): promotion,
  supersession, retirement;
* a tombstone (null value) removes the key, as log compaction would, except for a version
  that is active and enforcing: retirement goes through its gate (``contract retire``), so
  such a tombstone is rejected (``unretired_tombstone``) and the version stays in force.

Rejections never raise: :meth:`Registry.apply` returns a :class:`ConfigEvent` saying why.
The registry takes *decoded* records (plain dicts); the Avro bytes of the config topic are
decoded by :func:`worker.io.config_records.apply_config_value`, which also turns an
undecodable record into an ``invalid_record`` rejection (:meth:`Registry.reject`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from worker.core.contracts.parse import parse_contract
from worker.core.contracts.supersession import supersedes_of
from worker.core.errors import ContractGateError
from worker.core.lifecycle.policy import Published
from worker.core.model import ActiveVersion, Contract

__all__ = [
    "ConfigEvent",
    "RecordingRegistry",
    "Registry",
    "active_version_from_record",
    "config_key",
    "split_config_key",
]


@dataclass(frozen=True)
class ConfigEvent:
    """What applying one config record did.

    ``outcome`` is ``added`` | ``updated`` | ``unchanged`` | ``removed`` | ``rejected``;
    ``reason`` (rejections only) is ``edit_in_place`` | ``invalid_record`` |
    ``oversized_record`` |
    ``invalid_contract`` | ``key_mismatch`` | ``unretired_tombstone`` (a null value for a
    version that is still active and enforcing: refused, the version stays in force).
    ``tombstone`` is True for a null value (``removed`` when it deleted a version).
    ``superseded`` lists the ``layer/version`` keys this record turned from active to
    superseded (its ``supersedes`` field), in the same step that applied it.
    """

    outcome: str
    key: str
    layer: str | None
    message: str
    reason: str | None = None
    version: ActiveVersion | None = None
    tombstone: bool = False
    superseded: tuple[str, ...] = ()


def config_key(contract: Contract) -> str:
    """The config-topic key of a version: ``layer/version/digest``.

    With the digest in the key, an edit in place (same layer/version, another document)
    has a key of its own, so log compaction never replaces the original by the edit: the
    first record of a version stays on the topic and wins at every bootstrap. Keys
    without the digest (``layer/version``, written before) are still read.
    """
    return f"{contract.key}/{contract.digest}"


def split_config_key(key: str) -> tuple[str, str | None]:
    """``layer/version/digest`` -> ``("layer/version", digest)``; two-part keys keep None."""
    parts = key.split("/")
    if len(parts) == 3 and parts[2]:
        return f"{parts[0]}/{parts[1]}", parts[2]
    return key, None


def _layer_of(key: str) -> str | None:
    return key.split("/", 1)[0] if "/" in key else None


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


#: Layers without active versions whose (empty) answer is kept: event keys come from
#: producers, so the cache must not grow with every name they send.
_ACTIVE_CACHE_LAYERS = 1024


class Registry:
    """Contract versions known to this worker, keyed ``layer/version``.

    Supersession is applied with the record that carries it: a record whose
    ``supersedes`` names earlier revisions (``layer/version`` keys) turns those from
    ``active`` to ``superseded`` in the same step that adds it, so no reader ever sees the
    new revision and the revisions it supersedes enforcing together. The effect lasts as
    long as the superseding record is on the topic (log compaction keeps it: it is the
    latest record of its key), whatever the order: a superseded revision whose own record
    arrives later (or says ``active``) is held as superseded. Only an enforcing record
    supersedes (an observing one must not switch enforcement off).
    """

    def __init__(self) -> None:
        # the versions as their own records say (raw), what each record supersedes, and
        # the versions in force with supersession applied (the only dict readers see)
        self._raw: dict[str, ActiveVersion] = {}
        self._supersedes: dict[str, tuple[str, ...]] = {}
        self._versions: dict[str, ActiveVersion] = {}
        #: (the ``_versions`` it answers for, layer -> active versions oldest first)
        self._active_cache: (
            tuple[dict[str, ActiveVersion], dict[str, tuple[ActiveVersion, ...]]] | None
        ) = None

    def reject(
        self,
        key: str | None,
        message: str,
        reason: str = "invalid_record",
        *,
        layer: str | None = None,
    ) -> ConfigEvent:
        """The event for a record that never reached :meth:`apply` (it was too large, did
        not decode or its document did not parse); ``layer`` defaults to the key's."""
        key = key or ""
        return ConfigEvent("rejected", key, layer or _layer_of(key), message, reason)

    def _commit(
        self, raw: dict[str, ActiveVersion], supersedes: dict[str, tuple[str, ...]]
    ) -> tuple[str, ...]:
        """Install ``raw``/``supersedes`` and their effective versions in one assignment
        (copy on write: readers in other threads, e.g. HTTP /status, iterate the previous
        dict undisturbed); returns the keys this step turned from active to superseded."""
        by = {
            target
            for k, targets in supersedes.items()
            if raw.get(k) is not None and raw[k].mode == "enforcing"
            for target in targets
        }
        effective = {
            k: replace(v, state="superseded") if v.state == "active" and k in by else v
            for k, v in raw.items()
        }
        before = self._versions
        self._raw, self._supersedes, self._versions = raw, supersedes, effective
        return tuple(
            sorted(
                k
                for k, v in effective.items()
                if v.state == "superseded" and k in before and before[k].state == "active"
            )
        )

    def apply(
        self,
        key: str | None,
        record: Mapping[str, Any] | None,
        *,
        parsed: Contract | None = None,
    ) -> ConfigEvent:
        """Apply one decoded ContractRecord (``record`` None is a tombstone); ``parsed`` is
        its document already parsed (:func:`active_version_from_record`).

        ``record`` has the fields of the Avro ContractRecord (``layer``, ``version``,
        ``document``, ``digest``, ``mode``, ``state``, optional ``supersedes``, ...); it is
        untrusted: a document that fails validation, a digest that does not match it or a
        ``supersedes`` entry that is not an earlier revision of the same major is a
        rejection, never an error.
        """
        key, key_digest = split_config_key(key or "")
        layer_of_key = _layer_of(key)
        if record is None:
            return self._tombstone(key, key_digest, layer_of_key)
        source = f"config record {key or '<no key>'}"
        try:
            incoming = active_version_from_record(record, source=source, parsed=parsed)
            supersedes = supersedes_of(record.get("supersedes"), incoming.contract, source)
        except ContractGateError as exc:
            return ConfigEvent(
                "rejected", key, record.get("layer") or layer_of_key, str(exc), "invalid_contract"
            )
        c = incoming.contract
        if key != c.key or (key_digest and key_digest != c.digest):
            return ConfigEvent(
                "rejected",
                key,
                c.layer,
                f"{source}: key does not match the document's layer/version {c.key}",
                "key_mismatch",
            )
        known_raw = self._raw.get(key)
        if known_raw is not None and known_raw.contract.digest != c.digest:
            return ConfigEvent(
                "rejected",
                key,
                c.layer,
                f"{source}: edit in place refused: {key} is published with digest "
                f"{known_raw.contract.digest[:12]}, this record has {c.digest[:12]}; "
                "publish a new version instead",
                "edit_in_place",
            )
        known = self._versions.get(key)
        others = {k: v for k, v in self._supersedes.items() if k != key}
        turned = self._commit(
            {**self._raw, key: incoming},
            {**others, key: supersedes} if supersedes else others,
        )
        now = self._versions[key]
        tail = ""
        if now.state != incoming.state:
            tail += " (superseded by a later revision of its major)"
        turned = tuple(k for k in turned if k != key)
        if turned:
            tail += "; supersedes " + ", ".join(turned)
        if known is None:
            return ConfigEvent(
                "added",
                key,
                c.layer,
                f"{key} {now.mode} {now.state}{tail}",
                None,
                now,
                superseded=turned,
            )
        if (known.mode, known.state) == (now.mode, now.state) and not turned:
            return ConfigEvent("unchanged", key, c.layer, f"{key} unchanged", None, now)
        return ConfigEvent(
            "updated",
            key,
            c.layer,
            f"{key} {known.mode}/{known.state} -> {now.mode}/{now.state}{tail}",
            None,
            now,
            superseded=turned,
        )

    def _tombstone(self, key: str, key_digest: str | None, layer_of_key: str | None) -> ConfigEvent:
        gone = self._versions.get(key)
        if gone is not None and key_digest and key_digest != gone.contract.digest:
            # the key of a refused edit in place: the version in force is not touched
            return ConfigEvent(
                "unchanged",
                key,
                gone.contract.layer,
                f"tombstone for {key} digest {key_digest[:12]} (an edit never in force); "
                f"{gone.contract.version} digest {gone.contract.digest[:12]} stays",
                tombstone=True,
            )
        if gone is not None and gone.mode == "enforcing" and gone.state == "active":
            # a raw tombstone must not bypass the retirement gate (DESIGN.md section 5)
            return ConfigEvent(
                "rejected",
                key,
                gone.contract.layer,
                f"tombstone for {key} refused: {gone.contract.version} is enforcing and "
                "active, so deleting it would turn enforcement off; retire it with "
                "`contract-gate contract retire` (the zero-consumer gate) first",
                "unretired_tombstone",
                gone,
                tombstone=True,
            )
        self._commit(
            {k: v for k, v in self._raw.items() if k != key},
            {k: v for k, v in self._supersedes.items() if k != key},
        )
        return ConfigEvent(
            "removed" if gone else "unchanged",
            key,
            layer_of_key,
            f"tombstone for {key}"
            + (
                f": {gone.contract.version} ({gone.mode}/{gone.state}) deleted, no longer evaluated"
                if gone
                else " (unknown key)"
            ),
            tombstone=True,
        )

    def active(self, layer: str) -> tuple[ActiveVersion, ...]:
        """Active versions of ``layer``, oldest first (by major, then minor).

        Asked for every event: each layer's answer is kept until the versions change
        (``_versions`` is replaced, never mutated, so its identity says whether the
        answers are current), instead of sorting every known version per call."""
        versions = self._versions
        cache = self._active_cache
        if cache is None or cache[0] is not versions:
            cache = (versions, {})
            self._active_cache = cache  # one assignment: other threads see old or new
        hit = cache[1].get(layer)
        if hit is None:
            hit = tuple(
                sorted(
                    (
                        v
                        for v in versions.values()
                        if v.contract.layer == layer and v.state == "active"
                    ),
                    key=lambda v: (v.contract.major, v.contract.minor),
                )
            )
            if hit or len(cache[1]) < _ACTIVE_CACHE_LAYERS:  # unknown layers: bounded
                cache[1][layer] = hit
        return hit

    def versions(self, layer: str | None = None) -> tuple[ActiveVersion, ...]:
        """Every known version (any state), optionally of one layer, oldest first."""
        return tuple(
            v
            for v in sorted(
                self._versions.values(),
                key=lambda v: (v.contract.layer, v.contract.major, v.contract.minor),
            )
            if layer is None or v.contract.layer == layer
        )

    def get(self, key: str) -> ActiveVersion | None:
        return self._versions.get(key)

    def layers(self) -> tuple[str, ...]:
        return tuple(sorted({v.contract.layer for v in self._versions.values()}))


class RecordingRegistry(Registry):
    """A :class:`Registry` that also keeps the last accepted record of every key.

    Records the registry rejects (edit in place, invalid) are not kept, so what it
    returns is what the workers hold in force.
    """

    def __init__(self) -> None:
        super().__init__()
        self.records: dict[str, dict[str, Any]] = {}

    def apply(
        self,
        key: str | None,
        record: Mapping[str, Any] | None,
        *,
        parsed: Contract | None = None,
    ) -> ConfigEvent:
        event = super().apply(key, record, parsed=parsed)
        if event.outcome == "removed":
            self.records = {k: v for k, v in self.records.items() if k != event.key}
        elif event.outcome != "rejected" and record is not None and event.version is not None:
            self.records = {**self.records, event.key: dict(record)}
        return event

    def published(self, layer: str | None = None) -> list[Published]:
        """Every known version (any state), oldest first, optionally of one layer."""
        from dataclasses import replace as _replace

        # mode and state as in force: a revision superseded by a later record's
        # ``supersedes`` shows superseded even while its own record says active
        return [
            _replace(
                Published.from_record(v.contract, self.records[v.contract.key]),
                mode=v.mode,
                state=v.state,
            )
            for v in self.versions(layer)
            if v.contract.key in self.records
        ]
