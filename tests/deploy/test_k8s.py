"""deploy/k8s: every manifest validated offline, and checked against the code it deploys.

Core kinds are validated against the Kubernetes OpenAPI schemas shipped in
``kubernetes-validate`` (strict: unknown fields fail). KEDA's ScaledObject and
TriggerAuthentication and the Prometheus Operator's PodMonitor have no schema there: the
fields this deployment depends on are checked one by one. Ports, probe paths, environment
names, topic, group and partition counts are compared with the values in the code.
"""

from __future__ import annotations

import ast
import logging
import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from confluent_kafka import Producer

from worker.gate.config import GateConfig
from worker.kafka.settings import Settings, Topics
from worker.ops.http import DEFAULT_HTTP_PORT
from worker.ops.http_handlers import ENDPOINTS

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
CRD_KINDS = {"ScaledObject", "TriggerAuthentication", "PodMonitor"}
#: Kubernetes version whose schemas the core kinds are validated against.
K8S_VERSION = "1.30.0"
#: Highest VmHWM of a worker in tests/integration/test_scale_out.py (1.2 MB NYC batches).
MEASURED_PEAK_RSS_MIB = 311
#: Longest drain after SIGTERM: finish the poll batch (send offsets, commit), flush 10 s.
DRAIN_S = GateConfig().send_offsets_timeout_s + GateConfig().commit_timeout_s + 10


def _documents() -> list[tuple[str, dict[str, Any]]]:
    docs = []
    for path in sorted(K8S.glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        docs += [(path.name, d) for d in yaml.safe_load_all(path.read_text()) if d]
    return docs


def _one(kind: str, name: str | None = None) -> dict[str, Any]:
    found = [
        d
        for _, d in _documents()
        if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)
    ]
    assert len(found) == 1, f"{len(found)} {kind} {name or ''}"
    return found[0]


def _env_names_read_by_the_code() -> set[str]:
    """String constants of the package that name environment variables it reads."""
    names: set[str] = set()
    for path in (ROOT / "worker").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and re.fullmatch(r"(KAFKA|CONTRACT_GATE|OTEL)_[A-Z_]+", node.value)
            ):
                names.add(node.value)
    return names


@pytest.mark.parametrize("name,doc", _documents(), ids=lambda v: v if isinstance(v, str) else "")
def test_core_kinds_validate_against_the_kubernetes_schema(name: str, doc: dict[str, Any]) -> None:
    if doc["kind"] in CRD_KINDS:
        pytest.skip(f"{doc['kind']} is a custom resource: checked field by field below")
    kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def test_kustomization_lists_every_manifest() -> None:
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    listed = set(kustomization["resources"])
    present = {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    assert listed == present
    assert {i["name"] for i in kustomization["images"]} == {"contract-gate"}


def test_worker_ports_and_probes_match_the_http_server() -> None:
    sts = _one("StatefulSet", "contract-gate")
    pod = sts["spec"]["template"]["spec"]
    (worker,) = pod["containers"]
    assert worker["image"] == "contract-gate"  # replaced by kustomization's images
    ports = {p["name"]: p["containerPort"] for p in worker["ports"]}
    config = _one("ConfigMap", "contract-gate")["data"]
    assert ports == {"http": DEFAULT_HTTP_PORT}
    assert int(config["CONTRACT_GATE_HTTP_PORT"]) == DEFAULT_HTTP_PORT
    probes = {k: worker[k]["httpGet"] for k in ("startupProbe", "livenessProbe", "readinessProbe")}
    assert probes["livenessProbe"]["path"] == "/healthz"
    assert probes["readinessProbe"]["path"] == "/readyz"
    assert all(p["path"] in ENDPOINTS and p["port"] == "http" for p in probes.values())
    service = _one("Service", "contract-gate")
    assert service["spec"]["clusterIP"] == "None" and sts["spec"]["serviceName"] == "contract-gate"
    assert service["spec"]["ports"][0]["targetPort"] == "http"
    labels = sts["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    pdb = _one("PodDisruptionBudget", "contract-gate")
    assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert pdb["spec"]["maxUnavailable"] == 1


def test_pod_name_is_the_instance_id_and_the_grace_period_exceeds_the_drain() -> None:
    pod = _one("StatefulSet", "contract-gate")["spec"]["template"]["spec"]
    (worker,) = pod["containers"]
    env = {e["name"]: e for e in worker["env"]}
    assert env["CONTRACT_GATE_INSTANCE_ID"]["valueFrom"]["fieldRef"]["fieldPath"] == (
        "metadata.name"
    )
    assert pod["terminationGracePeriodSeconds"] > DRAIN_S
    assert pod["securityContext"]["runAsUser"] == 10001  # the image's USER
    assert worker["securityContext"]["readOnlyRootFilesystem"] is True
    assert {m["mountPath"] for m in worker["volumeMounts"]} == {"/tmp"}  # the image's WORKDIR


def _quantity_bytes(text: str) -> int:
    units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30}
    return int(text[:-2]) * units[text[-2:]]


def test_memory_request_covers_the_measured_resident_set() -> None:
    (worker,) = _one("StatefulSet", "contract-gate")["spec"]["template"]["spec"]["containers"]
    res = worker["resources"]
    request = _quantity_bytes(res["requests"]["memory"])
    limit = _quantity_bytes(res["limits"]["memory"])
    assert request >= 1.2 * MEASURED_PEAK_RSS_MIB * 2**20
    assert limit >= 3 * MEASURED_PEAK_RSS_MIB * 2**20


def test_env_names_are_those_the_code_reads_and_kafka_properties_are_valid() -> None:
    known = _env_names_read_by_the_code()
    config = _one("ConfigMap", "contract-gate")["data"]
    secret = _one("Secret", "contract-gate-kafka")["stringData"]
    (worker,) = _one("StatefulSet", "contract-gate")["spec"]["template"]["spec"]["containers"]
    names = set(config) | set(secret) | {e["name"] for e in worker["env"]}
    unknown = {n for n in names if n not in known and not n.startswith("CONTRACT_GATE_KAFKA_")} - {
        "OTEL_SERVICE_NAME"
    }  # read by the OpenTelemetry SDK itself
    assert not unknown, f"environment variables the code never reads: {sorted(unknown)}"
    assert "OTEL_SERVICE_NAME" in known  # also read by worker/ops/metrics.py

    settings = Settings.from_env({**config, **secret})
    assert settings.extra["sasl.username"] == secret["CONTRACT_GATE_KAFKA_SASL_USERNAME"]
    # librdkafka refuses unknown property names and bad values when a client is created
    conf = settings.producer(transactional=True)
    conf["logger"] = logging.getLogger("test-k8s-librdkafka")
    Producer(conf)

    for kind, name in (("StatefulSet", "contract-gate"), ("Job", "contract-gate-topics")):
        (container,) = _one(kind, name)["spec"]["template"]["spec"]["containers"]
        refs = {
            next(iter(r)): r[next(iter(r))]["name"] for r in container["envFrom"]
        }  # {"configMapRef": name, "secretRef": name}
        assert refs == {"configMapRef": "contract-gate", "secretRef": "contract-gate-kafka"}


def test_topics_job_keda_and_configmap_agree_on_topic_group_and_partitions() -> None:
    job = _one("Job", "contract-gate-topics")
    (container,) = job["spec"]["template"]["spec"]["containers"]
    argv = container["command"] + container["args"]
    assert argv[:3] == ["contract-gate", "topics", "create"]
    partitions = int(argv[argv.index("--partitions") + 1])
    assert int(argv[argv.index("--replication-factor") + 1]) >= 3

    scaled = _one("ScaledObject", "contract-gate")
    assert scaled["apiVersion"] == "keda.sh/v1alpha1"
    target = scaled["spec"]["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("StatefulSet", "contract-gate")
    assert scaled["spec"]["maxReplicaCount"] == partitions  # no idle members
    assert 1 <= scaled["spec"]["minReplicaCount"] <= partitions
    (trigger,) = scaled["spec"]["triggers"]
    assert trigger["type"] == "kafka"
    meta = trigger["metadata"]
    config = _one("ConfigMap", "contract-gate")["data"]
    assert meta["topic"] == Topics().batches
    assert meta["consumerGroup"] == config["CONTRACT_GATE_GROUP_ID"]
    assert meta["bootstrapServers"] == config["KAFKA_BOOTSTRAP_SERVERS"]
    assert int(meta["lagThreshold"]) > 0

    auth = _one("TriggerAuthentication", trigger["authenticationRef"]["name"])
    assert auth["apiVersion"] == "keda.sh/v1alpha1"
    params = {r["parameter"]: r for r in auth["spec"]["secretTargetRef"]}
    assert set(params) == {"sasl", "username", "password", "tls"}
    for ref in params.values():  # every referenced key exists in its Secret
        assert ref["key"] in _one("Secret", ref["name"])["stringData"]
    mechanism = _one("Secret", params["sasl"]["name"])["stringData"]["sasl"]
    keda_names = {
        "PLAIN": "plaintext",
        "SCRAM-SHA-256": "scram_sha256",
        "SCRAM-SHA-512": "scram_sha512",
    }
    assert mechanism == keda_names[config["CONTRACT_GATE_KAFKA_SASL_MECHANISM"]]
    assert params["username"]["name"] == "contract-gate-kafka"


def test_podmonitor_scrapes_the_metrics_endpoint_of_the_workers() -> None:
    monitor = _one("PodMonitor", "contract-gate")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    labels = _one("StatefulSet", "contract-gate")["spec"]["template"]["metadata"]["labels"]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= labels.items()
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    assert endpoint["path"] == "/metrics" and endpoint["path"] in ENDPOINTS
    assert endpoint["port"] == "http"


def test_the_worker_gives_itself_the_pods_grace_period_to_stop() -> None:
    """A fresh-user session: the StatefulSet allowed 120 s after SIGTERM, but the worker
    used --stop-grace-s's default (30 s) and exited with its transaction unfinished."""
    from worker.cli.main import build_parser

    spec = _one("StatefulSet", "contract-gate")["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    args = build_parser().parse_args(["run", *container["args"]])
    assert 100 <= args.stop_grace_s < spec["terminationGracePeriodSeconds"]
