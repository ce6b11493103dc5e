"""deploy/: the SLO and operations rules, the Grafana dashboard and the collector config.

Metric names are derived, not listed: every instrument the worker creates (``create_*``
calls in ``worker/*.py``, read with :mod:`ast`) converted to its Prometheus name the way
the OTel Prometheus exporter converts it, plus the ``record:`` names of the rules files.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from opentelemetry.exporter.prometheus._mapping import map_unit, sanitize_full_name

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
RULES = DEPLOY / "prometheus"
SLO_RULES = RULES / "contract-gate-slo-rules.yml"
SLO_TESTS = RULES / "tests" / "contract-gate-slo-rules.test.yml"
DASHBOARD = DEPLOY / "grafana" / "contract-gate.json"
COLLECTOR = DEPLOY / "otel-collector.yaml"
PROMTOOL = shutil.which("promtool")


# -- the names the worker exports -------------------------------------------------------
#: The OpenTelemetry ``Meter`` methods that create instruments.
_INSTRUMENT_FACTORIES = {
    "create_counter",
    "create_up_down_counter",
    "create_histogram",
    "create_gauge",
    "create_observable_counter",
    "create_observable_up_down_counter",
    "create_observable_gauge",
}


def _string_constants(tree: ast.Module) -> dict[str, str]:
    return {
        t.id: n.value.value
        for n in tree.body
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)
        for t in n.targets
        if isinstance(t, ast.Name) and isinstance(n.value.value, str)
    }


def _instruments(path: Path) -> list[tuple[str, str, str]]:
    """``(kind, otel name, unit)`` of every instrument created in one module.

    Handles a literal or module-constant name, and the loop form
    ``for name, ..., unit, ... in ((..), ..): meter.create_x(name, unit=unit)``.
    """
    tree = ast.parse(path.read_text())
    consts = _string_constants(tree)
    for node in tree.body:  # a constant imported from another module of the package
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("worker."):
            source = ROOT / (node.module or "").replace(".", "/")
            source = source / "__init__.py" if source.is_dir() else source.with_suffix(".py")
            theirs = _string_constants(ast.parse(source.read_text()))
            consts |= {a.asname or a.name: theirs[a.name] for a in node.names if a.name in theirs}
    found: list[tuple[str, str, str]] = []

    def creates(node: ast.AST) -> list[ast.Call]:
        return [
            c
            for c in ast.walk(node)
            if isinstance(c, ast.Call)
            and isinstance(c.func, ast.Attribute)
            and c.func.attr in _INSTRUMENT_FACTORIES
            and c.args
        ]

    looped: set[int] = set()
    for loop in (n for n in ast.walk(tree) if isinstance(n, ast.For)):
        if not (isinstance(loop.target, ast.Tuple) and isinstance(loop.iter, ast.Tuple)):
            continue
        names = [e.id if isinstance(e, ast.Name) else "" for e in loop.target.elts]
        for call in creates(loop):
            arg = call.args[0]
            if not (isinstance(arg, ast.Name) and arg.id in names):
                continue
            unit_var = next(
                (
                    k.value.id
                    for k in call.keywords
                    if k.arg == "unit" and isinstance(k.value, ast.Name)
                ),
                None,
            )
            for row in loop.iter.elts:
                assert isinstance(row, ast.Tuple)
                values = [e.value if isinstance(e, ast.Constant) else None for e in row.elts]
                unit = values[names.index(unit_var)] if unit_var in names else ""
                found.append((call.func.attr, str(values[names.index(arg.id)]), str(unit or "")))
            looped.add(id(call))
    for call in creates(tree):
        if id(call) in looped:
            continue
        arg = call.args[0]
        name = arg.value if isinstance(arg, ast.Constant) else consts.get(getattr(arg, "id", ""))
        assert isinstance(name, str), f"{path.name}: instrument name not resolvable"
        unit = next(
            (
                k.value.value
                for k in call.keywords
                if k.arg == "unit" and isinstance(k.value, ast.Constant)
            ),
            "",
        )
        found.append((call.func.attr, name, str(unit)))
    return found


def _prometheus_names(kind: str, name: str, unit: str) -> set[str]:
    """The series names the OTel Prometheus exporter (with prometheus_client) exposes."""
    base = sanitize_full_name(name)
    suffix = map_unit(unit)
    if kind in ("create_counter", "create_observable_counter"):
        base = base.removesuffix("_total")
        if suffix and not base.endswith("_" + suffix):
            base += "_" + suffix
        return {base + "_total"}
    if suffix and not base.endswith("_" + suffix):
        base += "_" + suffix
    if kind == "create_histogram":
        return {base + "_bucket", base + "_count", base + "_sum"}
    return {base}


def exported_names() -> set[str]:
    names: set[str] = set()
    for path in sorted((ROOT / "worker").rglob("*.py")):
        for kind, name, unit in _instruments(path):
            names |= _prometheus_names(kind, name, unit)
    return names


def _rule_files() -> list[Path]:
    return sorted(p for p in RULES.glob("*.yml") if not p.name.endswith(".test.yml"))


def _rules(path: Path) -> list[dict[str, object]]:
    doc = yaml.safe_load(path.read_text())
    return [r for g in doc["groups"] for r in g["rules"]]


def recorded_names() -> set[str]:
    return {str(r["record"]) for p in _rule_files() for r in _rules(p) if "record" in r}


_KEYWORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left"}
_KEYWORDS |= {"group_right", "offset", "bool", "inf", "nan"}


def metric_names(expr: str) -> set[str]:
    """Metric names in a PromQL expression (or a Grafana ``label_values(...)`` query)."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # strings
    text = re.sub(r"\{[^}]*\}", "", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", "", text)  # ranges
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", text)
    text = re.sub(r"\$\{?\w+\}?", "", text)  # dashboard variables
    text = re.sub(r"label_values\(\s*([\w:]+)\s*,[^)]*\)", r"\1", text)
    return {
        m.group(1)
        for m in re.finditer(r"(?<![\w.:])([a-zA-Z_:][\w:]*)\b(?!\s*\()", text)
        if m.group(1).lower() not in _KEYWORDS
    }


def test_names_are_derived_from_the_code() -> None:
    names = exported_names()
    # a counter, a histogram, the consumer helper's gauge, the migration and SLO gauges
    assert {
        "gis_contract_version_evaluations_total",
        "gis_contract_clause_evaluations_total",
        "gis_contract_batches_total",
        "gis_contract_config_rejections_total",
        "gis_contract_evaluation_duration_seconds_bucket",
        "gis_consumer_contract_version",
        "gis_contract_consumers",
    } <= names
    assert "gis_contract_evaluation_duration_bucket" not in names
    assert metric_names(
        'sum by (le) (rate(a_total{x="y",z=~"$v"}[$__rate_interval])) / on (l) b:c offset 5m'
    ) == {"a_total", "b:c"}


# -- Prometheus rules --------------------------------------------------------------------
def test_every_rule_references_exported_or_recorded_names() -> None:
    known = exported_names() | recorded_names()
    for path in _rule_files():
        for rule in _rules(path):
            unknown = metric_names(str(rule["expr"])) - known
            assert not unknown, f"{path.name} {rule.get('record') or rule.get('alert')}: {unknown}"


def test_every_slo_rule_and_alert_is_unit_tested() -> None:
    tests = yaml.safe_load(SLO_TESTS.read_text())["tests"]
    exprs = " ".join(t["expr"] for c in tests for t in c.get("promql_expr_test", []))
    alerts = {t["alertname"] for c in tests for t in c.get("alert_rule_test", [])}
    firing = {
        t["alertname"] for c in tests for t in c.get("alert_rule_test", []) if t["exp_alerts"]
    }
    for rule in _rules(SLO_RULES):
        if "alert" in rule:
            assert rule["alert"] in alerts & firing, f"{rule['alert']} is never shown firing"
        elif rule["record"] not in exprs:
            # a recorded name may be tested through the rules built on it
            users = [
                str(r.get("record") or r.get("alert"))
                for r in _rules(SLO_RULES)
                if rule["record"] in metric_names(str(r["expr"]))
            ]
            assert any(u in exprs or u in alerts for u in users), f"{rule['record']} untested"


def test_burn_rate_alerts_follow_the_workbook() -> None:
    rules = {r.get("alert"): r for r in _rules(SLO_RULES) if "alert" in r}
    fast, slow = (
        str(rules["ContractErrorBudgetFastBurn"]["expr"]),
        str(rules["ContractErrorBudgetSlowBurn"]["expr"]),
    )
    # (long window, short window, burn-rate factor) of the SRE Workbook's table
    for long, short, factor in (("1h", "5m", "14.4"), ("6h", "30m", "6")):
        assert f"ratio_rate{long}" in fast and f"ratio_rate{short}" in fast
        assert f"({factor} * gis:contract_version_error_budget:ratio)" in fast
    for long, short in (("1d", "2h"), ("3d", "6h")):
        assert f"ratio_rate{long}" in slow and f"ratio_rate{short}" in slow
    assert '{mode="enforcing"}' in fast and "mode=" not in slow


@pytest.mark.skipif(PROMTOOL is None, reason="promtool not installed (apt-get install prometheus)")
@pytest.mark.parametrize(
    "args",
    [
        ["check", "rules", "contract-gate-slo-rules.yml"],
        ["test", "rules", "tests/contract-gate-slo-rules.test.yml"],
    ],
)
def test_promtool_slo_rules(args: list[str]) -> None:
    assert PROMTOOL is not None
    done = subprocess.run(
        [PROMTOOL, *args], cwd=RULES, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


# -- Grafana -----------------------------------------------------------------------------
def _targets() -> list[tuple[str, str]]:
    doc = json.loads(DASHBOARD.read_text())
    return [
        (p["title"], t["expr"]) for p in doc["panels"] if p["type"] != "row" for t in p["targets"]
    ]


def test_dashboard_uses_only_exported_or_recorded_names() -> None:
    doc = json.loads(DASHBOARD.read_text())
    known = exported_names() | recorded_names()
    exprs = _targets() + [
        ("variable " + v["name"], v["definition"])
        for v in doc["templating"]["list"]
        if v["type"] == "query"
    ]
    assert len(exprs) > 10
    for title, expr in exprs:
        names = metric_names(expr)
        assert names, f"{title}: no metric in {expr!r}"
        assert names <= known, f"{title}: unknown {names - known} in {expr!r}"


def test_dashboard_shows_what_issue_5_asks_for() -> None:
    doc = json.loads(DASHBOARD.read_text())
    ids = [p["id"] for p in doc["panels"]]
    assert len(ids) == len(set(ids))
    assert all(
        t["datasource"]["uid"] == "${datasource}"
        for p in doc["panels"]
        if p["type"] != "row"
        for t in p["targets"]
    )
    exprs = [e for _, e in _targets()]
    used = set().union(*(metric_names(e) for e in exprs))
    # per-version compliance (both modes: no mode filter), migration, clauses, lag
    attainment = [e for e in exprs if "gis:contract_version_attainment:ratio_rate1h" in e]
    assert attainment and all("mode" not in e for e in attainment)
    assert {"gis_contract_consumers", "gis_consumer_contract_version"} <= used
    assert any(
        "gis_contract_clause_evaluations_total" in e and 'result="break"' in e and "clause" in e
        for e in exprs
    )
    assert "gis_contract_consumer_lag" in used


# -- OpenTelemetry Collector -------------------------------------------------------------
def test_collector_pipeline_wiring() -> None:
    doc = yaml.safe_load(COLLECTOR.read_text())
    service = doc["service"]
    assert set(service.get("extensions", [])) <= set(doc.get("extensions", {}))
    pipelines = service["pipelines"]
    assert "metrics" in pipelines
    for name, pipe in pipelines.items():
        for section in ("receivers", "processors", "exporters"):
            declared = set(doc.get(section) or {})
            missing = set(pipe.get(section, [])) - declared
            assert not missing, f"pipeline {name}: {section} {missing} not declared"
        assert pipe["receivers"] and pipe["exporters"]
    metrics = pipelines["metrics"]
    assert "otlp" in metrics["receivers"] and "prometheus" in metrics["exporters"]
    protocols = doc["receivers"]["otlp"]["protocols"]
    assert protocols["grpc"]["endpoint"].endswith(":4317")
    assert protocols["http"]["endpoint"].endswith(":4318")
    assert re.fullmatch(r"[\w.]+:\d+", doc["exporters"]["prometheus"]["endpoint"])
