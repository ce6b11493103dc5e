"""Argument helpers shared by the command modules: Kafka settings from flags, ``--now``
and ``--stale-after-hours`` (``--log-level`` is in :mod:`worker.cli.log_args`; the typed
values, times, numbers, seconds, in :mod:`worker.cli.value_types`).

Command modules (:mod:`worker.cli.commands`) import these, never :mod:`worker.cli.main`;
the payload flags are in :mod:`worker.cli.payload_args`.
"""

from __future__ import annotations

import argparse
import os
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

from worker.cli.value_types import bounded_int as bounded_int  # re-exported: the commands
from worker.cli.value_types import fraction as fraction  # import these from here
from worker.cli.value_types import hours, parse_time
from worker.cli.value_types import non_negative_seconds as non_negative_seconds
from worker.cli.value_types import positive_int as positive_int
from worker.cli.value_types import positive_seconds as positive_seconds
from worker.core.errors import ContractGateError

if TYPE_CHECKING:  # imported where used: `check` needs no Kafka settings
    from worker.kafka.settings import Settings

#: Exit codes of ``check``: admitted, quarantined, bad input (or any error of this package).
EXIT_ADMITTED, EXIT_QUARANTINED, EXIT_BAD_INPUT = 0, 1, 2
EXIT_BROKEN_PIPE = 128 + 13  # as a shell reports a process ended by SIGPIPE
#: A bug of contract-gate (an exception no layer translated): sysexits.h EX_SOFTWARE, so
#: that it never reads as a decision (1: quarantined, or failures of a review).
EXIT_INTERNAL = 70

_BUG = "70 on an internal error (a bug: rerun with --log-level DEBUG and report it)"


def exit_status_epilog(parser: argparse.ArgumentParser) -> str:
    """The exit statuses a command's ``--help`` ends with (:func:`worker.cli.main.main`):
    the codes its description states, or 0 when done and 2 on bad input or a refusal;
    then 70 for a bug and 130 for Ctrl-C (``broker``: Ctrl-C is its normal stop, 0)."""
    if parser.get_default("stops_on_sigint"):
        return f"Exit status: 0 when stopped with Ctrl-C or SIGTERM, 2 on bad input, {_BUG}."
    if "Exit " in (parser.description or ""):
        return (
            "Exit status otherwise: 2 on bad input, a refusal or a Kafka error (one line on "
            f"stderr naming the fix), {_BUG}, 130 on Ctrl-C."
        )
    return (
        "Exit status: 0 when done, 2 on bad input, a refusal or a Kafka error (one line on "
        f"stderr naming the fix), {_BUG}, 130 on Ctrl-C."
    )


#: The completion of an argument whose value is a local path: shtab's own file completers
#: (``shtab.FILE``, spelled here so that declaring an argument does not import shtab).
PATHS = {"bash": "_shtab_compgen_files", "zsh": "_files"}


def completes_paths(action: argparse.Action) -> argparse.Action:
    """Mark the argument ``action`` (from ``add_argument``) as taking a local path, so the
    completion scripts complete file names for it; returns ``action``. Options whose metavar
    is ``FILE`` or ``DIR`` are marked without it."""
    action.complete = PATHS  # type: ignore[attr-defined]  # shtab's attribute
    return action


def offending_features(count: int) -> str:
    """``"1 offending feature"``, ``"3 offending features"``: a count for messages."""
    return f"{count} offending feature{'' if count == 1 else 's'}"


def add_stale(p: argparse.ArgumentParser) -> None:
    """``--stale-after-hours`` of ``consumers status`` and ``contract retire``."""
    p.add_argument(
        "--stale-after-hours",
        type=hours,
        default=timedelta(days=7),
        dest="stale_after",
        metavar="HOURS",
        help="a declaration whose group no longer exists and older than this is shown as "
        "stale, not counted (default 168)",
    )


def add_now(p: argparse.ArgumentParser) -> None:
    """``--now`` of the lifecycle actions (``contract evidence``, ``promote``, ``list``)."""
    p.add_argument(
        "--now",
        type=parse_time,
        help="the time to judge spans and ages at (default: now), for reproducible runs",
    )


def now_of(args: argparse.Namespace) -> datetime:
    """``--now`` when given, else the current time (aware UTC)."""
    value: datetime = args.now or datetime.now(timezone.utc)
    return value


def parse_kv(text: str) -> tuple[str, str]:
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE (e.g. security.protocol=SSL)")
    k, v = text.split("=", 1)
    return k.strip(), v


def add_kafka_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("Kafka connection (flags override the environment)")
    g.add_argument(
        "--bootstrap-servers",
        help="host:port list (env KAFKA_BOOTSTRAP_SERVERS; default localhost:9092)",
    )
    g.add_argument(
        "--group-id",
        help="consumer group of the workers (env CONTRACT_GATE_GROUP_ID; default contract-gate)",
    )
    g.add_argument(
        "--transactional-id-prefix", help="prefix of transactional.id (default contract-gate)"
    )
    g.add_argument(
        "--instance-id",
        help="stable id of this worker instance, e.g. the pod name (env "
        "CONTRACT_GATE_INSTANCE_ID; default the host name). It names the transactional.id, so "
        "a restarted worker fences its predecessor; two processes on one host need two ids",
    )
    g.add_argument(
        "--static-membership",
        action="store_true",
        default=None,
        help="KIP-345 static membership: group.instance.id = the instance id (env "
        "CONTRACT_GATE_STATIC_MEMBERSHIP=1). A restarted member keeps its partitions without "
        "a rebalance; a dead one's partitions wait session.timeout.ms before takeover",
    )
    g.add_argument(
        "--session-timeout-ms",
        type=bounded_int(1, 3_600_000),
        help="consumer session.timeout.ms (default 45000)",
    )
    g.add_argument(
        "--kafka-property",
        action="append",
        type=parse_kv,
        default=[],
        metavar="KEY=VALUE",
        help="any librdkafka property for every client, repeatable (env CONTRACT_GATE_KAFKA_<KEY>)",
    )
    g.add_argument(
        "--schema-registry-url",
        metavar="URL",
        help="Confluent Schema Registry: read BatchArrival events framed with its wire format "
        "(magic byte 0, schema id) and write quarantine and evaluation records the same way, "
        "subjects <topic>-value (env CONTRACT_GATE_SCHEMA_REGISTRY_URL; basic auth from env "
        "CONTRACT_GATE_SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO=user:password). Default: plain Avro",
    )
    from worker.kafka.settings import Topics

    d = Topics()
    for field_name, default in d.__dict__.items():
        flag = f"--{field_name.replace('_', '-')}-topic"
        g.add_argument(
            flag, dest=f"topic_{field_name}", default=default, help=f"(default {default})"
        )
        if f"--{field_name}-topic" != flag:  # the underscore spelling, accepted, not shown
            g.add_argument(
                f"--{field_name}-topic",
                dest=f"topic_{field_name}",
                default=argparse.SUPPRESS,
                help=argparse.SUPPRESS,
            )


def settings_from_args(args: argparse.Namespace) -> Settings:
    """Settings from the environment, overridden by the flags that were given, once the
    broker they name has answered a metadata request.

    Every Kafka command starts here, so a broker that is down is one line within
    :data:`~worker.kafka.reach.REACH_TIMEOUT_S` seconds naming the bootstrap servers and
    where they came from, whatever the command would have done next.

    Raises
    ------
    BrokerUnavailable
        No broker answered (:func:`worker.kafka.reach.require_broker`).
    """
    from worker.kafka.reach import require_broker

    settings = _settings(args)
    if args.bootstrap_servers:
        source = "--bootstrap-servers"
    elif os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "").strip():
        source = "KAFKA_BOOTSTRAP_SERVERS"
    else:
        source = ""  # the default, localhost:9092
    require_broker(settings, source=source)
    return settings


def _settings(args: argparse.Namespace) -> Settings:
    """Settings from the environment, overridden by the flags that were given."""
    from worker.kafka.settings import Settings, Topics

    topics = Topics(**{k: getattr(args, f"topic_{k}") for k in Topics().__dict__})
    return Settings.from_env(
        bootstrap_servers=args.bootstrap_servers,
        group_id=args.group_id,
        transactional_id_prefix=args.transactional_id_prefix,
        instance_id=args.instance_id,
        session_timeout_ms=args.session_timeout_ms,
        static_membership=args.static_membership,
        extra=dict(args.kafka_property),
        topics=topics,
        payload_roots=getattr(args, "payload_root", None),
        max_payload_bytes=getattr(args, "max_payload_bytes", None),
        schema_registry_url=getattr(args, "schema_registry_url", None),
        signing_key=getattr(args, "signing_key", None),
        verify_key=getattr(args, "verify_key", None),
    )


def write_output(path: str, text: str) -> None:
    """Write ``text`` to the file ``path`` (UTF-8) for an ``--output``-like option.

    Raises
    ------
    ContractGateError
        The file cannot be written (a directory, a missing parent, no permission): one
        line naming the path, exit 2.
    """
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        raise ContractGateError(
            f"cannot write {path}: {exc.strerror or exc}",
            field="--output",
            fix="give a path in a directory you can write to",
        ) from None
