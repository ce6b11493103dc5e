"""The package's layering (docs/architecture.md): imports only go downward, no cycles.

worker.core <- worker.io <- worker.kafka <- {worker.gate, worker.control} <- worker.ops <-
worker.cli; ``gate`` (the data plane) and ``control`` (the contract lifecycle over Kafka) are
siblings that never import each other. The core is pure: no
Kafka client, no OpenTelemetry SDK, no sockets, no HTTP, no file or process I/O. Imports
are read with :mod:`ast` (every ``import`` statement, also inside functions and
``TYPE_CHECKING`` blocks), so an upward import hidden in a function body is found too.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "worker"
LAYERS = ("core", "io", "kafka", "gate", "control", "ops", "cli")
#: Rank of each layer: a module imports only from layers of a lower rank (or its own).
#: ``gate`` and ``control`` share a rank and so never import each other.
RANK = {"core": 0, "io": 1, "kafka": 2, "gate": 3, "control": 3, "ops": 4, "cli": 5}
#: Modules (or packages) the pure core must not import, with why.
CORE_FORBIDDEN = {
    "confluent_kafka": "the Kafka client belongs in worker.kafka",
    "opentelemetry.sdk": "the OpenTelemetry SDK belongs in worker.ops",
    "socket": "network I/O",
    "http": "network I/O",
    "urllib.request": "network I/O",
    "subprocess": "process I/O",
    "shutil": "file I/O",
    "tempfile": "file I/O",
    "pathlib": "file I/O (take text or bytes from worker.io instead)",
    "os": "environment and file I/O",
    "pyarrow.parquet": "file I/O (worker.io reads files)",
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imports(path: Path) -> list[tuple[str, int]]:
    """Absolute names imported by one module, with line numbers (``from a import b`` gives
    ``a.b`` when ``a.b`` is a module of the package, else ``a``)."""
    modules = _modules()
    found: list[tuple[str, int]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}: relative import at line {node.lineno}"
            base = node.module or ""
            for alias in node.names:
                full = f"{base}.{alias.name}"
                found.append((full if full in modules else base, node.lineno))
    return found


def _layer(module: str) -> int | None:
    parts = module.split(".")
    if parts[0] != "worker" or len(parts) < 2:
        return None
    if parts[1] == "__main__":
        return LAYERS.index("cli")
    return LAYERS.index(parts[1]) if parts[1] in LAYERS else None


def _rank(layer: int) -> int:
    return RANK[LAYERS[layer]]


def test_every_module_belongs_to_a_layer() -> None:
    outside = [
        m
        for m in _modules()
        if _layer(m) is None and m not in ("worker", "worker.data", "worker.__main__")
    ]
    assert outside == [], f"modules outside the layers: {outside}"


@pytest.mark.parametrize("module", sorted(_modules()))
def test_imports_only_go_down(module: str) -> None:
    mine = _layer(module)
    if mine is None:
        return
    upward = [
        f"line {line}: {name} ({LAYERS[theirs]})"
        for name, line in _imports(_modules()[module])
        if (theirs := _layer(name)) is not None
        and (_rank(theirs) > _rank(mine) or (_rank(theirs) == _rank(mine) and theirs != mine))
    ]
    assert upward == [], (
        f"{module} ({LAYERS[mine]}) imports from a layer above or beside it: {upward}"
    )


@pytest.mark.parametrize("module", sorted(m for m in _modules() if m.startswith("worker.core")))
def test_the_core_does_no_io(module: str) -> None:
    bad = [
        f"line {line}: {name} ({why})"
        for name, line in _imports(_modules()[module])
        for forbidden, why in CORE_FORBIDDEN.items()
        if name == forbidden or name.startswith(forbidden + ".")
    ]
    tree = ast.parse(_modules()[module].read_text())
    bad += [
        f"line {n.lineno}: open() (file I/O)"
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "open"
    ]
    assert bad == [], f"{module} is in the pure core but does I/O: {bad}"


def test_no_import_cycles() -> None:
    modules = _modules()
    graph = {
        m: sorted({n for n, _ in _imports(p) if n in modules and n != m})
        for m, p in modules.items()
    }
    # a package's __init__ re-exporting its own submodules is not a cycle of meaning
    for m in graph:
        graph[m] = [n for n in graph[m] if not (m.startswith(n + ".") and n in modules)]
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in graph[node]:
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*stack, nxt])
        state[node] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert cycles == [], "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_the_guard_sees_an_upward_import(tmp_path: Path) -> None:
    """The walker itself works: an import of worker.kafka from a core module is found."""
    fake = tmp_path / "m.py"
    fake.write_text("def f():\n    from worker.kafka.settings import Settings\n")
    names = [n for n, _ in _imports(fake)]
    assert "worker.kafka.settings" in names
    assert _layer("worker.kafka.settings") > _layer("worker.core.model")  # type: ignore[operator]


#: Names of file formats (issue 26: "grep finds no format name outside its reader module,
#: the registry and the docs"). Only worker/io/formats (the readers, the offenders file
#: writer, the registry) names them; help texts and messages take them from there.
FORMAT_NAMES = re.compile(
    r"geoparquet|geojson|parquet|shapefile|geopackage|gpkg|flatgeobuf|\bogr\b|\bfgb\b",
    re.IGNORECASE,
)
FORMATS_PACKAGE = PACKAGE / "io" / "formats"


def _format_names(path: Path) -> list[str]:
    """``path:line: text`` of every line of ``path`` that names a file format."""
    text = path.read_text(encoding="utf-8").splitlines()
    where = path.relative_to(PACKAGE.parent) if PACKAGE in path.parents else path
    return [
        f"{where}:{n}: {line.strip()}"
        for n, line in enumerate(text, 1)
        if FORMAT_NAMES.search(line)
    ]


def test_no_module_outside_the_formats_package_names_a_format() -> None:
    """Adding a reader is one module and one FORMATS line (docs/architecture-formats.md):
    a format named anywhere else (a docstring, a default label, a help text) is a place
    that format's facts would drift from its reader. No allow-list: a text that must name
    one takes it from the registry (``formats_named()``, ``OFFENDERS_FILE``)."""
    outside = [p for p in sorted(PACKAGE.rglob("*.py")) if FORMATS_PACKAGE not in p.parents]
    assert len(outside) > 150
    found = [hit for p in outside for hit in _format_names(p)]
    assert found == [], "format names outside worker/io/formats:\n" + "\n".join(found)


def test_the_format_guard_sees_a_format_name(tmp_path: Path) -> None:
    """The guard itself works: each name in any case is found, words that merely contain
    a short one (``fogr``, ``fgbx``) are not, and a reader module does name its format."""
    fake = tmp_path / "m.py"
    lines = ["a GeoParquet file", "read .PARQUET", "geojson", "Shapefile", "GeoPackage .gpkg"]
    lines += ["FlatGeobuf", "through OGR", "a .fgb", "fogr fgbx"]
    fake.write_text("\n".join(lines) + "\n")
    assert [h.split(":")[1] for h in _format_names(fake)] == [str(n) for n in range(1, 9)]
    assert len(_format_names(FORMATS_PACKAGE / "geojson.py")) > 5


def test_the_planes_are_siblings() -> None:
    """The data plane and the control plane share a rank: neither may import the other."""
    gate, control = LAYERS.index("gate"), LAYERS.index("control")
    assert _rank(gate) == _rank(control)
    assert _rank(LAYERS.index("kafka")) < _rank(gate) < _rank(LAYERS.index("ops"))


#: Files in ruff's per-file-ignores of C901 and PLR0913 when the ratchet was set (issue 25).
RATCHET_FILES = 46


def test_the_lint_ratchet_only_shrinks() -> None:
    """The complexity (C901) and argument-count (PLR0913) offenders listed in
    ``pyproject.toml`` may only shrink: every listed file still breaks a listed rule (a file
    split or simplified below the bounds must leave the list), and the list never grows past
    :data:`RATCHET_FILES`. ``ruff check`` itself refuses any offender not listed."""
    import json
    import subprocess
    import sys

    import tomllib

    root = PACKAGE.parent
    config = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["ruff"]["lint"]
    listed = {
        f: set(rules)
        for f, rules in config["per-file-ignores"].items()
        if f.startswith("worker/") and {"C901", "PLR0913"} & set(rules)
    }
    assert len(listed) <= RATCHET_FILES, "the ratchet's list grew: simplify instead"
    found = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "worker", "--select", "C901,PLR0913",
         "--config", "lint.per-file-ignores = {}", "--output-format", "json", "--exit-zero"],
        cwd=root, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    broken: dict[str, set[str]] = {}
    for finding in json.loads(found):
        path = Path(finding["filename"]).resolve().relative_to(root).as_posix()
        broken.setdefault(path, set()).add(finding["code"])
    stale = {f: sorted(rules - broken.get(f, set())) for f, rules in listed.items()}
    stale = {f: rules for f, rules in stale.items() if rules}
    assert stale == {}, f"no longer needed, remove from per-file-ignores: {stale}"


#: Issue 25: no module over 400 lines, fewer than 10 over 300 (8 today: the gate's
#: processor, housekeeping and route, the codec's events, the config follower, the
#: control plane's publish, the core's model and registry); may only shrink.
MAX_LINES = 400
MAX_OVER_300 = 8


def test_modules_stay_small() -> None:
    sizes = {
        str(p.relative_to(PACKAGE.parent)): len(p.read_text(encoding="utf-8").splitlines())
        for p in PACKAGE.rglob("*.py")
    }
    assert {m: n for m, n in sizes.items() if n > MAX_LINES} == {}
    over = sorted(m for m, n in sizes.items() if n > 300)
    assert len(over) <= MAX_OVER_300, over


#: Issue 25: tests reach private names of the package fewer than 10 times (``ruff check
#: --select SLF001 tests``; 3 today): the loop's tests use the in-memory broker's public
#: fault injection instead. May only shrink.
MAX_PRIVATE_REACHES = 3


def test_tests_reach_few_private_names() -> None:
    import json
    import subprocess
    import sys

    found = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "tests", "--select", "SLF001",
         "--output-format", "json", "--exit-zero"],
        cwd=PACKAGE.parent, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    reaches = [f"{f['filename']}:{f['location']['row']}" for f in json.loads(found)]
    assert len(reaches) <= MAX_PRIVATE_REACHES, reaches
