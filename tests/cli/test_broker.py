"""``contract-gate broker``: arguments, storage URLs, and the broker's log redaction."""

from __future__ import annotations

import pytest

from worker.cli.main import build_parser, main
from worker.kafka.embedded import EmbeddedBroker, redact_url


def test_defaults_are_a_free_loopback_port_in_memory() -> None:
    args = build_parser().parse_args(["broker"])
    assert (args.port, args.host, args.storage) == (0, "127.0.0.1", "memory://tansu/")
    assert (args.create_topics, args.partitions) == (False, 3)


@pytest.mark.parametrize("port", ["-1", "65536", "ninety"])
def test_a_port_outside_0_65535_is_refused(port: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["broker", "--port", port])
    assert exc.value.code == 2
    assert "is not a TCP port (0..65535" in capsys.readouterr().err


def test_an_unknown_storage_scheme_is_refused_before_starting(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["broker", "--storage", "redis://localhost/"]) == 2
    err = capsys.readouterr().err
    assert "'redis://localhost/' is not a Tansu storage URL" in err
    assert "s3://BUCKET/" in err


def test_passwords_in_storage_urls_are_redacted() -> None:
    assert redact_url("postgres://gate:s3cret@db:5432/tansu") == "postgres://gate:***@db:5432/tansu"
    assert redact_url("s3://bucket/") == "s3://bucket/"
    assert redact_url("memory://tansu/") == "memory://tansu/"


def test_log_tail_redacts_passwords_strips_colours_and_explains_missing_engines(
    tmp_path: pytest.TempPathFactory,
) -> None:
    log = tmp_path / "tansu.log"  # type: ignore[operator]
    log.write_text(
        "tansu broker 0.6.0\n"
        '\x1b[31mERROR\x1b[0m FeatureNotEnabled { feature: "postgres", '
        'message: "postgres://u:hunter2@db/x" }\n'
    )
    broker = EmbeddedBroker(log_path=str(log))
    tail = broker.log_tail()
    assert "hunter2" not in tail and "postgres://u:***@db/x" in tail
    assert "\x1b[" not in tail and "ERROR FeatureNotEnabled" in tail
    assert "lacks that storage engine" in tail
