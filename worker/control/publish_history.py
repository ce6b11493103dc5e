"""The parts of ``contract publish`` around the policy: restoring the records of a document
that a broken layer history misses (issue 30), and the :class:`PublishResult` of a
publication built from the policy's decision."""

from __future__ import annotations

import getpass
from datetime import datetime, timezone

from worker.control.results import PublishResult, RecordWritten
from worker.core.lifecycle.policy import PolicyDecision
from worker.core.lifecycle.registry import Registry
from worker.core.model import Contract
from worker.kafka.config_writer import produce_config_record
from worker.kafka.settings import Settings

__all__ = ["publish_result", "restore_history"]


def publish_result(
    contract: Contract,
    outcome: tuple[str, str],
    mode: str,
    *,
    decision: PolicyDecision | None = None,
    records: tuple[RecordWritten, ...] = (),
) -> PublishResult:
    """The :class:`PublishResult` of ``contract`` from ``outcome`` (its name and the
    message), the policy's ``decision`` (None for a restore) and the records written;
    ``file`` is left empty for the caller, ``mode`` is the mode asked for (the decision's
    when it writes)."""
    name, message = outcome
    change_class = None
    if decision is not None and decision.action == "write":
        classification = decision.classification
        change_class = classification.class_ if classification is not None else "first"
    predecessor = decision.predecessor if decision is not None else None
    writes = decision.writes if decision is not None and decision.action == "write" else ()
    return PublishResult(
        file="",
        layer=contract.layer,
        version=contract.version,
        key=contract.key,
        digest=contract.digest,
        change_class=change_class,
        mode=writes[0].mode if writes else mode,
        outcome=name,
        dry_run=name.startswith("dry-run"),
        predecessor=predecessor.contract.version if predecessor is not None else None,
        supersedes=tuple(p.contract.version for p in writes[1:]),
        message=message,
        records=records,
        notes=decision.notes if decision is not None else (),
        warnings=decision.warnings if decision is not None else (),
    )


def restore_history(
    settings: Settings, registry: Registry, contract: Contract, mode: str | None, dry_run: bool
) -> tuple[RecordWritten, ...] | str | None:
    """Write the records of ``contract``'s document that its layer's broken history misses
    (issue 30); returns the records written (with ``dry_run``, the line saying which it
    would write), None when nothing of this document is missing (an ordinary publication).

    The document record goes back under ``layer/version/digest`` (mode ``mode``, else the
    document's, else ``enforcing``; a surviving state record of it still says how far its
    lifecycle went), and each missing state record of it under its own key, rebuilt from
    the key (``.../mode-state``). Only the genuine document restores: its digest is in the
    key.
    """
    from worker.control.lifecycle import lifecycle_record
    from worker.core.lifecycle.history import parse_history_key
    from worker.core.lifecycle.policy import Published
    from worker.core.lifecycle.registry import config_key
    from worker.io.codec import encode_contract_record

    doc_key = config_key(contract)
    wanted = [
        k
        for k in registry.missing(contract.layer)
        if k == doc_key or k.startswith(doc_key + "/") or k == contract.key
    ]
    if not wanted:
        return None
    if dry_run:
        return "dry run (nothing written): would restore " + ", ".join(wanted)
    now, by = datetime.now(timezone.utc), getpass.getuser()
    head = registry.head(contract.layer)
    written = []
    for key in [doc_key, *(k for k in wanted if k != doc_key)]:
        hk = parse_history_key(key)
        document = hk is None or hk.mode is None
        p = Published(
            contract,
            (hk.mode if hk and hk.mode else None) or mode or contract.declared_mode or "enforcing",
            (hk.state if hk and hk.state else None) or "active",
            None,
            (),
            now,
            by,
        )
        new_key, record = lifecycle_record(p, document=document, builds_on=head, now=now, by=by)
        if key == contract.key:  # a key of the oldest form (no digest): a legacy record
            new_key, record = key, p.to_record()
        partition, offset = produce_config_record(settings, new_key, encode_contract_record(record))
        head = new_key
        topic = settings.topics.contracts
        written.append(
            RecordWritten(new_key, contract.key, p.mode, p.state, topic, partition, offset)
        )
    return tuple(written)
