"""Publishing to the gate: contract versions to the config topic, batches to the input topic."""

from __future__ import annotations

import getpass
import re
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlparse

from worker.control.publish_history import publish_result, restore_history
from worker.control.published import BatchPublished, read_by_reference, unwritten_geometries
from worker.control.results import PublishResult
from worker.core._util.text import clip
from worker.core.contracts.coherence import contradictions
from worker.core.errors import (
    BrokerError,
    ContractError,
    ContractGateError,
    CrsError,
    PolicyError,
)
from worker.core.lifecycle.registry import Registry
from worker.core.model import AxisOrder, Batch, Contract
from worker.core.spatial import resolve_crs
from worker.io.codec import encode_batch
from worker.io.contract_files import load_contract
from worker.io.payloads import read_batch_file
from worker.io.payloads.policy import UNRESTRICTED, PayloadPolicy
from worker.io.payloads.upload import upload_payload
from worker.kafka.admin import produce_one
from worker.kafka.config_topic import read_config
from worker.kafka.settings import Settings

__all__ = [
    "BatchPublished",
    "contract_record",
    "publish_batch",
    "publish_batch_file",
    "publish_contract",
    "read_registry",
    "restore_history",
    "unwritten_geometries",
]


def read_registry(settings: Settings, timeout_s: float = 30.0) -> Registry:
    """The config topic read to its end into a fresh :class:`Registry`."""
    return read_config(settings, Registry(), timeout_s)


def contract_record(
    contract: Contract,
    *,
    mode: str,
    state: str = "active",
    change_class: str | None = None,
    published_by: str | None = None,
    published_at: datetime | None = None,
) -> dict[str, object]:
    """The ContractRecord (as a dict for :func:`worker.io.codec.encode_contract_record`)."""
    return {
        "layer": contract.layer,
        "version": contract.version,
        "document": contract.text,
        "digest": contract.digest,
        "mode": mode,
        "state": state,
        "change_class": change_class,
        "differences": [],
        "published_at": published_at or datetime.now(timezone.utc),
        "published_by": published_by or getpass.getuser(),
        "changelog": contract.changelog,
    }


def publish_contract(
    settings: Settings,
    path: str | Path,
    *,
    mode: str | None = None,
    published_by: str | None = None,
    dry_run: bool = False,
    now: datetime | None = None,
) -> PublishResult:
    """Publish a contract file as a new version under the lifecycle policy; returns what it
    did (:class:`~worker.control.results.PublishResult`: the class, the outcome, the records
    written, the notes, among them one per bbox region crossing the antimeridian, which a
    swapped minx/maxx also produces: :func:`worker.core.clauses.region.antimeridian_notes`).

    The file is classified against the newest version of its layer on the config topic
    (docs/design.md sections 4 and 5,
    :func:`worker.core.lifecycle.policy.decide_publish`): same key and
    digest is a no-op; same key, other digest is refused (edit in place); the number must
    follow the class; a tightening must be observing; an enforcing minor supersedes the
    earlier revisions of its major; a major opens an overlap. ``dry_run`` writes nothing.
    ``mode`` None takes the document's ``mode`` field, else ``enforcing``.

    Raises
    ------
    ContractError
        The file is not a valid contract, or two of its clauses contradict each other
        (:func:`worker.core.contracts.coherence.contradictions`).
    PolicyError
        The policy refuses the publication (the message names the class and the fix).
    BrokerError
        The config topic cannot be read or written.
    """
    from worker.core.clauses.region import antimeridian_notes

    contract = load_contract(path)
    problems = contradictions(contract)
    if problems:  # refused when published, never when read back: published ones keep loading
        raise ContractError(
            f"{path}: {contract.key}: " + "; ".join(problems),
            field="clauses",
            fix="make the clauses agree with each other, then publish again",
        )
    result = _publish(settings, contract, path, mode, published_by, dry_run, now)
    crossing = tuple(antimeridian_notes(contract))
    return replace(
        result,
        file=str(path),
        dry_run=dry_run,
        notes=(*result.notes, *crossing),
        antimeridian=crossing,
    )


def _publish(
    settings: Settings,
    contract: Contract,
    path: str | Path,
    mode: str | None,
    published_by: str | None,
    dry_run: bool,
    now: datetime | None,
) -> PublishResult:
    """:func:`publish_contract` after the document is read: the policy and the writes."""
    from worker.control.lifecycle import produce_records, read_published
    from worker.core.lifecycle.publishing import decide_publish

    registry = read_published(settings)
    wanted_mode = mode or contract.declared_mode or "enforcing"
    restored = restore_history(settings, registry, contract, mode, dry_run)
    if restored is not None:
        outcome = "dry-run-restore" if dry_run else "restored"
        message = restored if isinstance(restored, str) else ""
        records = () if isinstance(restored, str) else restored
        return publish_result(contract, (outcome, message), wanted_mode, records=records)
    breaks = registry.breaks(contract.layer)
    if breaks:  # the policy cannot be checked against a history that is not whole
        raise PolicyError(
            f"{contract.layer}: the contract history on {settings.topics.contracts} is broken "
            f"({clip(breaks[0], 300)}); `contract-gate contract list {contract.layer}` shows "
            "every break; publish the genuine documents it names first",
            field="file",
            fix="publish the genuine documents `contract list` names first",
        )
    known = registry.published(contract.layer)
    decision = decide_publish(
        contract,
        mode=wanted_mode,
        known=known,
        published_by=published_by or getpass.getuser(),
        now=now or datetime.now(timezone.utc),
    )
    if decision.action == "refuse":
        raise PolicyError(decision.message, field=decision.field or "file", fix=decision.fix)
    if decision.action == "noop" or dry_run:
        message, outcome = decision.message, "no-op"
        if dry_run and decision.action == "write":
            # say what would happen, never that it happened
            would = re.sub(r"\bpublished\b", "would be published", decision.message)
            would = re.sub(r"\bsupersedes\b", "would supersede", would)
            would = re.sub(r"\boverlap begins\b", "an overlap would begin", would)
            message, outcome = "dry run (nothing written): " + would, "dry-run"
        return publish_result(contract, (outcome, message), wanted_mode, decision=decision)
    records = produce_records(
        settings,
        decision.writes,
        head=registry.head(contract.layer),
        documents=frozenset({contract.key}),
    )
    # read back: a publication of the same version racing this one may have landed too
    # (without the read-back both publishers were told "published"); two documents
    # of one version break the layer's history, and the workers fail closed (issue 30)
    after = read_published(settings)
    others = [
        e
        for e in after.entries(contract.layer).values()
        if e.vkey == contract.key
        and e.kind in ("document", "legacy")
        and e.digest != contract.digest
    ]
    if others:
        other = others[0]
        by = (other.record or {}).get("published_by", "?")
        raise PolicyError(
            f"{contract.key}: another document of this version reached the config topic too "
            f"(digest {(other.digest or '')[:12]}, published by {clip(str(by), 80)}; this file "
            f"{contract.digest[:12]}); the workers refuse both and quarantine the layer's "
            "batches (contract_history_broken) until the topic is rebuilt from git: give "
            "your change the next version number",
            field="version",
            fix="give your change the next version number",
        )
    return publish_result(
        contract, ("published", decision.message), wanted_mode, decision=decision, records=records
    )


def publish_batch(
    settings: Settings, batch: Batch, *, payload_uri: str | None = None
) -> tuple[int, int]:
    """Publish one batch-arrival event keyed by layer; returns ``(partition, offset)``.

    With ``settings.schema_registry`` the event is framed in the Schema Registry wire
    format (our schema registered under ``<batches topic>-value``).

    Raises
    ------
    RegistryUnavailable
        The registry cannot be reached or refuses the schema.
    """
    from worker.kafka.schema_registry import codec_for

    value = encode_batch(batch, inline=payload_uri is None, payload_uri=payload_uri)
    registry = codec_for(settings)
    if registry is not None:
        value = registry.frame(value, settings.topics.batches, "BatchArrival")
    try:
        return produce_one(settings, settings.topics.batches, batch.layer, value)
    except BrokerError as exc:
        if payload_uri is None and "too large" in str(exc).lower():
            raise BrokerError(
                f"{exc}: the event with its {len(batch.geometries_wkb)} features inline is "
                f"{len(value)} bytes; send the features by reference instead (--by-reference "
                "for a file the workers can read, or --upload s3://bucket/prefix/)",
                field="--by-reference",
                fix="send the features by reference (--by-reference, or --upload s3://bucket/prefix/)",
            ) from None
        raise


def publish_batch_file(
    settings: Settings,
    path: str | Path,
    *,
    layer: str,
    crs: str | None = None,
    axis_order: AxisOrder | None = None,
    data_time: datetime | None = None,
    batch_id: str | None = None,
    producer: str = "contract-gate-cli",
    by_reference: bool = False,
    upload: str | None = None,
    policy: PayloadPolicy = UNRESTRICTED,
    warn: Callable[[str], None] | None = None,
    on_stage: Callable[[str, int, float], None] = lambda what, count, started: None,
) -> BatchPublished:
    """Read a batch file (a format read by reference, see :mod:`worker.io.formats`) and
    publish it as a batch-arrival event; returns where it went (:class:`BatchPublished`,
    whose ``summary`` is the command's line).

    ``path`` is a local path or a ``file://``/``s3://`` URI. ``by_reference`` sends a
    ``payload_uri`` instead of inline features: ``path``'s absolute ``file://`` URI (or
    ``path`` itself when it is a URI), or, with ``upload`` (``s3://bucket/prefix/`` or
    ``file:///dir/``, implies ``by_reference``), the URI of the copy written there as
    ``<batch id>/<file name>`` before the event is published. The workers read it only
    under their payload roots. ``warn`` is given one line when features inline have a
    geometry the reader could not write as WKB (:func:`unwritten_geometries`), and when the
    file declares a CRS that cannot be resolved. ``on_stage`` (progress) is called with
    ``("read", features, started)`` once the file is read and ``("sent", features,
    started)`` once the event is published (``started``: ``time.monotonic()`` of the
    stage's start).

    Raises
    ------
    PayloadError
        The file cannot be read or uploaded.
    ContractGateError
        A bad ``upload`` destination, or a batch id of the form ``PARTITION@OFFSET``.
    CrsError
        ``crs`` cannot be resolved (pyproj).
    """
    if batch_id is not None and not batch_id.strip():
        raise ContractGateError(
            "--batch-id is empty: give the batch an id, or leave it out",
            field="--batch-id",
            fix="give the batch an id, or leave it out",
        )
    if crs:
        resolve_crs(crs)  # as `check --crs`: a CRS that does not resolve is bad input
    if batch_id is not None and re.fullmatch(r"\d+@\d+", batch_id.strip()):
        # `quarantine show/replay 1@2` name a record by its coordinates: such an id would
        # show or replay another batch
        raise ContractGateError(
            f"--batch-id {batch_id!r} reads as PARTITION@OFFSET, which `quarantine show` and "
            "`replay` take as record coordinates; choose an id with another form",
            field="--batch-id",
            fix="choose an id with another form",
        )
    flag = "--upload" if upload else "--by-reference" if by_reference else None
    referable = read_by_reference(str(path), policy, flag)  # refused here, not by workers
    started = time.monotonic()
    batch = read_batch_file(
        path,
        layer=layer,
        crs=crs,
        axis_order=axis_order,
        data_time=data_time,
        batch_id=batch_id,
        producer=producer,
        policy=policy,
    )
    on_stage("read", len(batch.geometries_wkb), started)
    if batch.crs_conflict:  # the file's own CRS contradicts --crs (issue 26, T09 kind)
        raise ContractGateError(
            f"{path}: {batch.crs_conflict}",
            field="--crs",
            fix="leave --crs out, or give the CRS the file declares",
        )
    uri: str | None = None
    if upload:
        name = f"{batch.batch_id}/{PurePosixPath(str(path)).name}"
        try:
            uri = upload_payload(path, upload, name, policy)
        except ValueError as exc:
            raise ContractGateError(
                f"--upload {upload}: {exc}",
                field="--upload",
                fix="give s3://bucket/prefix/ or file:///dir/",
            ) from None
    elif by_reference:
        uri = _reference_uri(str(path))
    if uri is None and warn is not None and batch.geometry_errors:
        warn(unwritten_geometries(batch.geometry_errors, by_reference=referable))
    if warn is not None and not crs and (line := unresolvable_crs(batch)):
        warn(line)
    started = time.monotonic()
    partition, offset = publish_batch(settings, batch, payload_uri=uri)
    on_stage("sent", len(batch.geometries_wkb), started)
    return BatchPublished(
        batch.batch_id,
        layer,
        len(batch.geometries_wkb),
        settings.topics.batches,
        partition,
        offset,
        uri,
    )


def unresolvable_crs(batch: Batch) -> str | None:
    """The warning for a batch whose file declares a CRS that pyproj cannot resolve, or
    None. Such a batch is published (the contracts decide), but its producer is told."""
    if not batch.declared_crs:
        return None
    try:
        resolve_crs(batch.declared_crs)
    except CrsError as exc:
        return (
            f"warning: the file declares a CRS that cannot be resolved ({exc}); a contract's "
            "crs clause breaks on it, and without one its regions are compared with the "
            "coordinates as stored (give --crs to declare another)"
        )
    return None


def _reference_uri(text: str) -> str:
    """The ``payload_uri`` announcing the batch file ``text``: an ``s3://`` URI as given, a
    local path or ``file:`` URI (``file:/x``, ``file:///x``, ``file://localhost/x``) as the
    absolute ``file:///`` URI of the file it names (a ``file:/x`` was announced as the
    relative path ``<cwd>/file:/x``)."""
    parsed = urlparse(text)
    if parsed.scheme == "s3":
        return text
    if parsed.scheme == "file":
        return Path(unquote(parsed.path)).resolve().as_uri()
    return Path(text).resolve().as_uri()
