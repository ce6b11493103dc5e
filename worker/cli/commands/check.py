"""The gate's own commands: ``check``, ``run``, ``topics create``, ``contract publish``,
``batch publish`` and ``demo``.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from dataclasses import replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from worker.cli.args import (
    EXIT_ADMITTED,
    EXIT_QUARANTINED,
    file_policy,
    offending_features,
    settings_from_args,
    write_output,
)
from worker.cli.commands.consumers import cmd_retire
from worker.cli.commands.contract.lifecycle import LIFECYCLE_COMMANDS
from worker.core._util.jsonsafe import dumps_json
from worker.core.errors import ContractGateError

if TYPE_CHECKING:
    from worker.core.chunks import ChunkedBatch
    from worker.core.model import Batch, Decision


def cmd_check(args: argparse.Namespace) -> int:
    """``check``: a GeoParquet file is evaluated chunk by chunk, as the worker evaluates a
    by-reference payload (peak memory bounded by a chunk, not the file); other formats,
    and any file when ``--offenders`` or ``--html`` asks for pictures of its features,
    are read whole. Both give the same decision."""
    from worker.core.chunks import ChunkedBatch
    from worker.core.contracts.coherence import contradictions
    from worker.core.model import ActiveVersion
    from worker.io.contract_files import load_contract
    from worker.io.reports.text import decision_to_json, render_decision

    if not args.contract and not args.observing:
        raise ContractGateError("give at least one --contract FILE (or --observing FILE)")
    _refuse_overwriting_inputs(args)
    if args.crs:
        from worker.core.spatial import resolve_crs

        resolve_crs(args.crs)  # a --crs that does not resolve is bad input (exit 2)
    versions = [ActiveVersion(load_contract(f), "enforcing") for f in args.contract]
    versions += [ActiveVersion(load_contract(f), "observing") for f in args.observing]
    keys = [v.contract.key for v in versions]
    twice = sorted({k for k in keys if keys.count(k) > 1})
    if twice:
        raise ContractGateError(
            f"{', '.join(twice)} given more than once; pass each version once (a version is "
            "one document: two files with the same layer/version are an edit in place)"
        )
    layers = {v.contract.layer for v in versions}
    if len(layers) > 1:
        raise ContractGateError(
            f"contracts are for different layers {sorted(layers)}; check one layer at a time"
        )
    for v in versions:
        for problem in contradictions(v.contract):
            print(f"warning: {v.contract.key}: {problem}", file=sys.stderr)
    loaded = _read_batch(args, layers.pop(), versions)
    now = args.now or datetime.now(timezone.utc)
    decision, count, claims = _evaluate_batch(loaded, versions, now)
    for line in claims:
        print(f"warning: {line}", file=sys.stderr)
    if not isinstance(loaded, ChunkedBatch):  # read whole for them (see _read_batch)
        _write_pictures(args, loaded, decision, versions)
    if args.format == "json":
        print(dumps_json(decision_to_json(decision), indent=2, default=str))
    else:
        print(render_decision(decision, title=f"batch {args.batch}: {count} features"))
    return EXIT_ADMITTED if decision.admitted else EXIT_QUARANTINED


def _read_batch(args: argparse.Namespace, layer: str, versions: Any) -> Batch | ChunkedBatch:
    """The batch file of ``check``, with ``--crs``, ``--axis-order``, ``--data-time`` and
    ``--id-column``: a GeoParquet file as chunks (its footer read here), unless
    ``--offenders`` or ``--html`` need every geometry at once; other formats whole.

    Raises
    ------
    ContractGateError
        ``--id-column`` names no column of the file (the columns are named).
    PayloadError
        The file cannot be read (as :func:`worker.io.payloads.read_batch_file`).
    """
    from worker.core.chunks import ChunkedBatch
    from worker.io.payloads import read_batch_file, read_batch_file_chunked

    pictures = bool(args.offenders or getattr(args, "html", None))
    read = read_batch_file if pictures else read_batch_file_chunked
    loaded = read(
        args.batch,
        layer=layer,
        crs=args.crs,
        axis_order=args.axis_order,
        data_time=args.data_time,
        policy=file_policy(args),
    )
    meta = loaded.batch if isinstance(loaded, ChunkedBatch) else loaded
    columns = meta.attributes.column_names
    if args.id_column:
        if args.id_column not in columns:
            raise ContractGateError(
                f"--id-column {args.id_column!r} is not a column of {args.batch} (columns: "
                f"{', '.join(columns) or 'none'})"
            )
        return _with_id_column(loaded, args.id_column)
    for v in versions:  # the contract's own id column: named by index when absent
        col = v.contract.id_column
        if col and col not in columns:
            print(
                f"warning: {v.contract.key} names id_column {col!r}, which is not a "
                f"column of {args.batch}: offending features are named by the file's "
                "feature ids where it has them, else by index (--id-column COL names "
                "another column)",
                file=sys.stderr,
            )
    return loaded


def _with_id_column(loaded: Batch | ChunkedBatch, column: str) -> Batch | ChunkedBatch:
    """``loaded`` (and every chunk of it) with ``id_column`` set to ``column``."""
    from worker.core.chunks import ChunkedBatch

    if not isinstance(loaded, ChunkedBatch):
        return replace(loaded, id_column=column)
    chunks = loaded.chunks
    return ChunkedBatch(
        replace(loaded.batch, id_column=column),
        lambda: (replace(c, id_column=column) for c in chunks()),
    )


def _evaluate_batch(
    loaded: Batch | ChunkedBatch, versions: Any, now: datetime
) -> tuple[Decision, int, list[str]]:
    """The decision on ``loaded``, its number of features and the sentences of its file's
    metadata claims that the geometries contradict (:mod:`worker.core.facts.claims`): chunk by
    chunk for a :class:`ChunkedBatch` (claims tallied per chunk and merged), else whole."""
    from worker.core.chunks import ChunkedBatch, evaluate_chunked
    from worker.core.clauses.tally import Tally, merge
    from worker.core.evaluate import evaluate
    from worker.core.facts.batch import BatchFacts
    from worker.core.facts.claims import claim_disagreements, claims_tally, disagreements_of

    if not isinstance(loaded, ChunkedBatch):
        facts = BatchFacts(loaded)  # shared with the claims: the geometries are read once
        decision = evaluate(loaded, versions, now=now, facts=facts)
        return decision, len(loaded.geometries_wkb), claim_disagreements(facts)
    claims: list[Tally] = [{}]

    def tally_claims(facts: BatchFacts) -> None:
        claims[0] = merge(claims[0], claims_tally(facts))

    decision = evaluate_chunked(loaded, versions, now=now, on_chunk=tally_claims)
    meta = BatchFacts(loaded.batch)
    return decision, loaded.batch.feature_count, disagreements_of(claims[0], meta)


def _refuse_overwriting_inputs(args: argparse.Namespace) -> None:
    """Raise :class:`ContractGateError` (exit 2) when ``--offenders`` or ``--html`` names
    the batch file, a contract file or the other output: the input would be overwritten
    (a fresh-user session replaced its batch with the offenders file, exit 1, no warning).
    """
    inputs: list[tuple[str, str]] = [("the batch file", args.batch)]
    inputs += [("a --contract file", f) for f in args.contract]
    inputs += [("an --observing file", f) for f in args.observing]
    given = [(flag, getattr(args, flag[2:], None)) for flag in ("--offenders", "--html")]
    outputs: list[tuple[str, str]] = [(flag, str(path)) for flag, path in given if path]
    for i, (flag, path) in enumerate(outputs):
        for what, other in inputs + [(f"the {f} file", p) for f, p in outputs[:i]]:
            if _same_file(path, other):
                raise ContractGateError(
                    f"{flag} {path} is {what}: it would be overwritten; write the output "
                    "to another path"
                )


def _same_file(a: str, b: str) -> bool:
    """Whether two local paths (``file://`` URIs too) name one file: the same inode when
    both exist, else the same absolute path; other URIs (``s3://``) name no local file."""
    from worker.io.payloads.open import local_file_path

    pa, pb = local_file_path(a), local_file_path(b)
    if pa is None or pb is None:
        return False
    try:
        return os.path.samefile(pa, pb)
    except OSError:  # one does not exist (yet)
        return pa.resolve() == pb.resolve()


def _write_pictures(args: argparse.Namespace, batch: Any, decision: Any, versions: Any) -> None:
    """``check --offenders FILE`` (GeoJSON) and ``--html FILE`` (the batch page)."""
    from pathlib import Path

    from worker.io.reports.offenders import broken_clauses, offenders_collection

    if args.offenders:
        doc = offenders_collection(batch, broken_clauses(decision), name=Path(args.batch).stem)
        write_output(args.offenders, dumps_json(doc, ensure_ascii=False, default=str))
        print(
            f"wrote {offending_features(len(doc['features']))} to {args.offenders}",
            file=sys.stderr,
        )
    if getattr(args, "html", None):
        from worker.io.reports.page import render_batch_page

        page = render_batch_page(batch, decision, [v.contract for v in versions], title=args.batch)
        write_output(args.html, page)
        print(f"wrote {args.html}; open it in a browser", file=sys.stderr)


def cmd_run(args: argparse.Namespace) -> int:
    from worker.gate.config import GateConfig
    from worker.gate.processor import Processor
    from worker.kafka.settings import describe_settings
    from worker.ops.http import start_http_server
    from worker.ops.http_handlers import DecisionLog
    from worker.ops.metrics import GateMetrics, configure_sdk
    from worker.ops.migration_exporter import MigrationExporter

    settings = settings_from_args(args)
    provider = configure_sdk()
    stop = threading.Event()

    def on_signal(*_: Any) -> None:
        if stop.is_set():
            return
        stop.set()
        # a loop stuck in a blocking client call must not outlive the pod's grace period
        timer = threading.Timer(
            args.stop_grace_s,
            _force_exit,
            (f"did not stop within {args.stop_grace_s:.0f} s of the signal", 143),
        )
        timer.daemon = True
        timer.start()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    threads = (
        f"routing threads {args.routing_threads} "
        f"(events of {GateConfig.min_ahead_bytes // 1024} KiB or more)"
        if args.routing_threads > 1
        else "routing on the poll loop's thread"
    )
    print(f"contract-gate worker: {describe_settings(settings)}; {threads}", file=sys.stderr)
    decisions = DecisionLog()  # the last decisions and counts shown on /status
    config = GateConfig(
        max_batch_events=args.max_batch_events,
        max_batch_wait_ms=args.max_batch_wait_ms,
        batch_deadline_s=args.batch_deadline_s,
        config_timeout_s=args.config_timeout_s,
        routing_threads=args.routing_threads,
        stop_grace_s=args.stop_grace_s,
    )
    pipeline = Processor(config, settings, metrics=GateMetrics(), on_outcome=decisions)
    http = start_http_server(pipeline, settings, args.http_port, args.http_host, decisions)
    exporter = MigrationExporter(settings, pipeline.registry)  # unattributed groups, counts
    if http is not None:
        http.migration = lambda: exporter.view  # migration counts on /status
    try:
        pipeline.start(progress=lambda s: print(s, file=sys.stderr))
        exporter.start()
        print("worker running; SIGTERM or Ctrl-C stops it", file=sys.stderr)
        pipeline.run(stop, on_stuck=lambda message: _force_exit(message, 75))
    finally:
        exporter.stop()
        pipeline.close()  # also when start() failed; a no-op after run()
        if http is not None:
            http.close()
    provider.shutdown()
    print(
        f"worker stopped after {pipeline.batches_committed} events "
        f"({pipeline.transactions_aborted} transactions aborted)",
        file=sys.stderr,
    )
    return 0


def _force_exit(message: str, status: int) -> None:
    """End the process now (the worker is stuck): status 75 for a stuck client call,
    143 for a stop signal not honoured in time. Nothing is lost: the open transaction is
    aborted by the broker or fenced by the restarted worker, and the batch is consumed
    again from the committed offsets."""
    print(f"contract-gate worker: {message}; exiting with status {status}", file=sys.stderr)
    sys.stderr.flush()
    os._exit(status)


def cmd_topics(args: argparse.Namespace) -> int:
    from worker.kafka.admin import NOT_COMPACTED, create_topics

    settings = settings_from_args(args)
    uncompacted = 0
    for name, outcome in create_topics(
        settings, partitions=args.partitions, replication_factor=args.replication_factor
    ).items():
        print(f"{name}: {outcome}")
        uncompacted += NOT_COMPACTED in outcome
    from worker.control.read_paths import create_per_major_topics

    for name, outcome in create_per_major_topics(
        settings, partitions=args.partitions, replication_factor=args.replication_factor
    ).items():
        print(f"{name}: {outcome} (per-major read path)")
    return 1 if uncompacted else 0


def cmd_contract(args: argparse.Namespace) -> int:
    from worker.control.publish import publish_contract

    if args.contract_command in LIFECYCLE_COMMANDS:
        return int(LIFECYCLE_COMMANDS[args.contract_command](args))
    if args.contract_command == "retire":
        return cmd_retire(args)

    settings = settings_from_args(args)
    print(
        publish_contract(
            settings,
            args.file,
            mode=args.mode,
            published_by=args.published_by,
            dry_run=args.dry_run,
        )
    )
    return 0


def cmd_batch(args: argparse.Namespace) -> int:
    from worker.control.publish import publish_batch_file

    settings = settings_from_args(args)
    print(
        publish_batch_file(
            settings,
            args.file,
            layer=args.layer,
            crs=args.crs,
            axis_order=args.axis_order,
            data_time=args.data_time,
            batch_id=args.batch_id,
            producer=args.producer,
            by_reference=args.by_reference,
            upload=args.upload,
            policy=file_policy(args),
            warn=lambda line: print(line, file=sys.stderr),
        )
    )
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from worker.cli.demo import run_demo

    def _terminate(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)  # unwinds run_demo's finally: the broker is stopped

    signal.signal(signal.SIGTERM, _terminate)
    return run_demo(timeout_s=args.timeout_s)
