"""Every typed option of every command against hostile values (stop 39, a new user's attempts).

argparse turns a type's ``ArgumentTypeError``, ``ValueError`` or ``TypeError`` into exit 2
with the option named; anything else escapes as a traceback. Found by hand: ``--data-time
0001-01-01T00:00:00+14:00`` (OverflowError: before year 1 in UTC), ``--stale-after-hours
inf`` or ``1e20`` (OverflowError in timedelta), and ``type=float`` options that took NaN,
infinities and negatives: ``demo --serve-s -100`` shortened the demo's deadline, so it
stopped at once with "did not finish within --timeout-s 90 s", and ``--timeout-s 1e300``
overflowed the deadline timer (OverflowError in its thread: no deadline at all).

So the tests walk the whole parser tree: each option with a type is fed the same hostile
values, and each must be refused with argparse's error or return a usable value (a float
finite and at most a week of seconds; a time within the dates Python holds).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import pytest

from worker.cli.main import build_parser, main
from worker.cli.parser_tree import arguments, walk

MAX_SECONDS = 7 * 24 * 3600  # worker.cli.args.MAX_SECONDS: a week
MAX_HOURS = 10 * 365 * 24  # worker.cli.args.MAX_HOURS: ten years
HOSTILE = [
    "nan", "-nan", "inf", "-inf", "Infinity", "1e300", "-1e300", "1e400", "1e20", "-1",
    "-0", "0", "", " ", "9" * 400, "-" + "9" * 5000, "0x10", "1_000", "\x00", "٣",
    "0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00", "0001-01-01T00:00:00Z",
    "2026-11-29T06:00:00", "2026-11-29", "2026-02-30T00:00:00Z", "a=b", "=", "GiB",
]  # fmt: skip


def _typed() -> list[tuple[str, str, Callable[[str], Any]]]:
    out = []
    for path, parser in walk(build_parser()):
        for action in arguments(parser):
            kind = action.type
            if callable(kind) and kind not in (str, object) and action.option_strings:
                out.append((path, action.option_strings[-1], kind))
    return out


TYPED = _typed()


def test_the_walk_finds_the_typed_options() -> None:
    names = {option for _, option, _ in TYPED}
    assert {"--data-time", "--now", "--stale-after-hours", "--serve-s", "--timeout-s"} <= names
    assert {"--objective", "--eval-threads", "--stop-grace-s", "--margin"} <= names


def _usable(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value) and abs(value) <= MAX_SECONDS
    if isinstance(value, timedelta):
        return timedelta(0) < value <= timedelta(hours=MAX_HOURS)
    if isinstance(value, int) and not isinstance(value, bool):
        return value >= 0  # counts, ports, partitions, offsets
    if isinstance(value, datetime):
        return value.tzinfo is not None
    return True


@pytest.mark.parametrize(("path", "option", "kind"), TYPED, ids=[f"{p} {o}" for p, o, _ in TYPED])
def test_every_typed_option_refuses_hostile_values_or_returns_a_usable_one(
    path: str, option: str, kind: Callable[[str], Any]
) -> None:
    for text in HOSTILE:
        try:
            value = kind(text)
        except (argparse.ArgumentTypeError, ValueError, TypeError):
            continue  # argparse: exit 2, the option named
        assert _usable(value), (path, option, text, value)


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["check", "b.parquet", "--data-time", "0001-01-01T00:00:00+14:00"], "years 1 to 9999"),
        (["check", "b.parquet", "--now", "9999-12-31T23:59:59-14:00"], "years 1 to 9999"),
        (["consumers", "status", "--stale-after-hours", "inf"], "not a number of hours"),
        (["contract", "retire", "l", "v1", "--stale-after-hours", "1e20"], "at most 87600"),
        (["contract", "retire", "l", "v1", "--stale-after-hours", "-1"], "> 0"),
        (["demo", "--serve-s", "-100"], "--serve-s: '-100' is not a number of seconds"),
        (["demo", "--serve-s", "nan"], "--serve-s: 'nan'"),
        (["demo", "--timeout-s", "1e300"], "at most 604800"),
        (["run", "--stop-grace-s", "1e9"], "--stop-grace-s"),
        (["contract", "init", "s.parquet", "--layer", "l", "--objective", "inf"], "fraction"),
        (["consumers", "assert", "l", "v1", "--partition", "0", "--offset", "-1"], "--offset"),
    ],
)
def test_the_command_line_exits_2_naming_the_option(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err
