"""Run ``contract-gate`` in-process against the test's topics (shared by integration tests)."""

from __future__ import annotations

from typing import Any

from worker.cli.main import main
from worker.kafka.settings import Settings


def kafka_argv(settings: Settings) -> list[str]:
    """The connection flags naming ``settings``' broker, group and every topic."""
    argv = ["--bootstrap-servers", settings.bootstrap_servers, "--group-id", settings.group_id]
    for name, topic in settings.topics.__dict__.items():
        argv += [f"--{name.replace('_', '-')}-topic", topic]
    return argv


def run_cli(settings: Settings, capsys: Any, *args: str) -> tuple[int, str, str]:
    """``contract-gate ARGS`` with the Kafka flags: ``(exit code, stdout, stderr)``."""
    capsys.readouterr()
    code = main([*args, *kafka_argv(settings)])
    out, err = capsys.readouterr()
    return code, out, err
