"""worker.config_topic.ConfigFollower without a broker: how applied records are logged.

(Not test_config_topic.py: that basename is taken by tests/integration/test_config_topic.py.)
"""

from __future__ import annotations

import logging

import pytest

from worker.codec import encode_contract_record
from worker.config_topic import ConfigFollower
from worker.contracts import load_contract, parse_contract
from worker.kafka import Settings
from worker.publish import contract_record
from worker.registry import Registry
from worker.scenario import data_file


class _Msg:
    def __init__(self, key: str, value: bytes | None) -> None:
        self._key, self._value = key.encode(), value

    def key(self) -> bytes:
        return self._key

    def value(self) -> bytes | None:
        return self._value


def _edit_in_place() -> tuple[_Msg, _Msg]:
    v1 = load_contract(data_file("contracts/admin_boundaries.v1.yaml"))
    edited = parse_contract(v1.text.replace("changelog:", "changelog: edited"), source="e")
    assert edited.key == v1.key and edited.digest != v1.digest
    return (
        _Msg(v1.key, encode_contract_record(contract_record(v1, mode="enforcing"))),
        _Msg(v1.key, encode_contract_record(contract_record(edited, mode="enforcing"))),
    )


@pytest.mark.parametrize(("quiet", "level"), [(False, logging.WARNING), (True, logging.DEBUG)])
def test_rejections_are_warnings_for_the_worker_and_debug_for_cli_reads(
    quiet: bool, level: int, caplog: pytest.LogCaptureFixture
) -> None:
    # found by a fresh-user session: CLI reads printed the worker's WARNING about an edit in
    # place on the config topic, which read as if the command itself had failed
    original, edited = _edit_in_place()
    follower = ConfigFollower(Settings(), Registry(), quiet_rejections=quiet)
    caplog.set_level(logging.DEBUG, logger="worker.config_topic")
    follower._apply(original)
    follower._apply(edited)
    rejected = [r for r in caplog.records if "rejected (edit_in_place)" in r.getMessage()]
    assert [r.levelno for r in rejected] == [level]


def test_read_config_is_quiet_about_rejections(monkeypatch: pytest.MonkeyPatch) -> None:
    from worker import config_topic

    made: list[ConfigFollower] = []
    monkeypatch.setattr(ConfigFollower, "bootstrap", lambda self, t: made.append(self) or 0)
    config_topic.read_config(Settings(), Registry())
    assert [f.quiet_rejections for f in made] == [True]
