"""deploy/compose.yaml: it cannot run here (no Docker engine), so it is checked against the
code and the other deploy files: services, ports, environment names, file references,
and every ``contract-gate`` command line it runs, parsed by the real argument parser."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.test_k8s import DRAIN_S, _env_names_read_by_the_code
from worker.cli.main import build_parser
from worker.kafka.settings import MAX_MESSAGE_BYTES
from worker.ops.http import DEFAULT_HTTP_PORT

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
COMPOSE = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
SERVICES: dict[str, Any] = COMPOSE["services"]
DATA = ROOT / "worker" / "data"


def _seconds(text: str) -> float:
    return float(text[:-1]) * {"s": 1, "m": 60}[text[-1]]


def test_the_stack_has_its_services() -> None:
    assert set(SERVICES) == {
        "kafka",
        "topics",
        "worker",
        "otel-collector",
        "prometheus",
        "grafana",
        "demo-loader",
    }
    assert SERVICES["worker"]["deploy"]["replicas"] == 2
    built = SERVICES["topics"]["build"]
    assert (DEPLOY / built["context"] / built["dockerfile"]).resolve() == DEPLOY / "Dockerfile"
    images = {SERVICES[s]["image"] for s in ("topics", "worker", "demo-loader")}
    assert images == {"contract-gate:0.1.0"}  # built once, by the topics service


def test_kafka_is_kraft_and_the_gate_reaches_it() -> None:
    env = SERVICES["kafka"]["environment"]
    assert "controller" in env["KAFKA_PROCESS_ROLES"]
    assert "ZOOKEEPER" not in " ".join(env)
    advertised = dict(item.split("://", 1) for item in env["KAFKA_ADVERTISED_LISTENERS"].split(","))
    for service in ("topics", "worker", "demo-loader"):
        assert (
            SERVICES[service]["environment"]["KAFKA_BOOTSTRAP_SERVERS"] == advertised["PLAINTEXT"]
        )
    assert int(env["KAFKA_MESSAGE_MAX_BYTES"]) >= MAX_MESSAGE_BYTES
    assert env["KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR"] == "1"  # one node
    host_port = advertised["EXTERNAL"].rsplit(":", 1)[1]
    assert f"{host_port}:{host_port}" in SERVICES["kafka"]["ports"]


def test_worker_environment_ports_and_grace_period() -> None:
    worker = SERVICES["worker"]
    env = worker["environment"]
    known = _env_names_read_by_the_code()
    assert set(env) - known == set(), "environment variables the code never reads"
    assert int(env["CONTRACT_GATE_HTTP_PORT"]) == DEFAULT_HTTP_PORT
    assert worker["ports"] == [str(DEFAULT_HTTP_PORT)]
    assert _seconds(worker["stop_grace_period"]) > DRAIN_S
    # OTLP goes to the collector's gRPC receiver
    collector = yaml.safe_load((DEPLOY / "otel-collector.yaml").read_text())
    grpc = collector["receivers"]["otlp"]["protocols"]["grpc"]["endpoint"].rsplit(":", 1)[1]
    assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == f"http://otel-collector:{grpc}"


def test_every_mounted_file_exists() -> None:
    for name, service in SERVICES.items():
        for volume in service.get("volumes", []):
            host = volume.split(":", 1)[0]
            assert (DEPLOY / host).exists(), f"{name}: {host} does not exist"


def test_prometheus_scrapes_the_collector_and_loads_the_rules() -> None:
    config = yaml.safe_load((DEPLOY / "compose" / "prometheus.yml").read_text())
    collector = yaml.safe_load((DEPLOY / "otel-collector.yaml").read_text())
    port = collector["exporters"]["prometheus"]["endpoint"].rsplit(":", 1)[1]
    (job,) = config["scrape_configs"]
    assert job["static_configs"][0]["targets"] == [f"otel-collector:{port}"]
    mounted = {
        v.split(":")[1] for v in SERVICES["prometheus"]["volumes"] if "/rules/" in v.split(":")[1]
    }
    (pattern,) = config["rule_files"]
    assert {Path(m).parent for m in mounted} == {Path(pattern).parent}
    rules = {p.name for p in (DEPLOY / "prometheus").glob("*-rules.yml")}
    assert {Path(m).name for m in mounted} == rules


def test_grafana_provisions_the_prometheus_datasource_and_the_dashboard() -> None:
    provisioning = DEPLOY / "compose" / "grafana" / "provisioning"
    (source,) = yaml.safe_load((provisioning / "datasources" / "prometheus.yaml").read_text())[
        "datasources"
    ]
    prometheus_port = SERVICES["prometheus"]["ports"][0].split(":")[1]
    assert source["type"] == "prometheus"
    assert source["url"] == f"http://prometheus:{prometheus_port}"
    (provider,) = yaml.safe_load((provisioning / "dashboards" / "contract-gate.yaml").read_text())[
        "providers"
    ]
    mounts = dict(v.split(":")[:2] for v in SERVICES["grafana"]["volumes"])
    assert mounts["./grafana"] == provider["options"]["path"]
    assert (DEPLOY / "grafana" / "contract-gate.json").exists()


def _gate_command_lines() -> list[list[str]]:
    lines = [SERVICES["topics"]["entrypoint"] + SERVICES["topics"]["command"]]
    script = SERVICES["demo-loader"]["command"][0]
    for line in script.splitlines():
        words = shlex.split(
            line.replace('"$$data', f'"{DATA}').replace('"$$now"', "2026-11-30T00:00:00Z")
        )
        if words and words[0] == "contract-gate":
            lines.append(words)
    return lines


@pytest.mark.parametrize("argv", _gate_command_lines(), ids=lambda a: " ".join(a[1:3]))
def test_every_contract_gate_command_parses_and_names_existing_files(argv: list[str]) -> None:
    args = build_parser().parse_args(argv[1:])
    path = getattr(args, "file", None)
    if path is not None:
        assert Path(path).is_file(), path


def test_demo_loader_publishes_every_shipped_contract_and_batch() -> None:
    lines = _gate_command_lines()
    published = {Path(a[3]).name for a in lines if a[1:3] == ["contract", "publish"]}
    assert published == {p.name for p in (DATA / "contracts").glob("*.yaml")}
    batches = {Path(a[3]).name for a in lines if a[1:3] == ["batch", "publish"]}
    assert batches == {p.name for p in DATA.glob("*.parquet")}
