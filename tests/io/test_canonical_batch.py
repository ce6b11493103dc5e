"""The canonical batch (issue 26, T06 kind): every reader returns attribute columns in
plain Arrow types, whatever layout the writer chose (view, large, dictionary, run-end
encoded), so a clause never meets a type its kernels lack and the verdict is the same."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import shapely
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.catalogue import active
from worker.core.contracts.parse import parse_contract
from worker.core.evaluate import evaluate
from worker.io.formats import FORMATS
from worker.io.formats.base import derive_schema
from worker.io.formats.canonical import UndecodableText, canonical_table, canonical_type
from worker.io.formats.geoparquet import _features, _geo_column
from worker.io.payloads import read_batch_file, read_features

T = datetime(2026, 11, 29, 6, tzinfo=timezone.utc)
GEO = {
    "version": "1.1.0",
    "primary_column": "geometry",
    "columns": {"geometry": {"encoding": "WKB", "geometry_types": ["Point"]}},
}
CONTRACT = parse_contract(
    """
layer: landcover_points
version: v1
cadence: P1D
objective: 0.99
owner: tests
changelog: canonical types
clauses:
- name: landcover
  kind: domain
  column: landcover
  values: {"Forêt": forest, "Marais": marsh}
- name: schema
  kind: schema
  allow_extra: true
  fields:
    - {name: landcover, type: string, nullable: true}
    - {name: tags, type: list, nullable: true}
"""
)

#: Each family: a layout of the same string values (and of the list column).
FAMILIES: dict[str, Any] = {
    "plain": lambda a: a,
    "large": lambda a: a.cast(pa.large_string()),
    "view": lambda a: a.cast(pa.string_view()),
    "dictionary": lambda a: a.dictionary_encode(),
    "run-end": pc.run_end_encode,
}
#: The list column's type in each family (built from the values: no cast reaches views).
LISTS: dict[str, pa.DataType] = {
    "plain": pa.list_(pa.string()),
    "large": pa.large_list(pa.large_string()),
    "view": pa.list_view(pa.string_view()),
    "dictionary": pa.list_(pa.dictionary(pa.int8(), pa.string())),
    "run-end": pa.large_list_view(pa.string()),
}


def _table(codes: list[str | None], family: str) -> pa.Table:
    wkb = [shapely.to_wkb(shapely.Point(10.0 + i / 100, 50.0)) for i in range(len(codes))]
    tags = pa.array([[c] if c is not None else None for c in codes], LISTS[family])
    table = pa.table(
        {
            "landcover": FAMILIES[family](pa.array(codes, pa.string())),
            "tags": tags,
            "geometry": pa.array(wkb, pa.binary()),
        }
    )
    return table.replace_schema_metadata({b"geo": json.dumps(GEO).encode()})


def _verdict(batch: Any) -> tuple[Any, ...]:
    decision = evaluate(batch, [active(CONTRACT)], now=T)
    clauses = [
        (r.name, r.result, json.dumps(r.measured, sort_keys=True, default=str))
        for r in decision.verdicts[0].clauses
    ]
    return decision.decision, tuple(clauses)


def _batch_of(tmp_path: Path, codes: list[str | None], family: str) -> Any:
    table = _table(codes, family)
    if family == "run-end":  # Parquet cannot store runs (pyarrow: "Unhandled type"): the
        # reader's own function takes the table as a reader holding it would
        data = _features("mem.parquet", table, _geo_column("mem.parquet", table.schema))
        path = tmp_path / "plain.parquet"
        pq.write_table(table.drop_columns(["landcover", "tags"]), path)
        batch = read_batch_file(path, layer="landcover_points", data_time=T)
        fields = derive_schema(data.attributes)
        return replace(batch, attributes=data.attributes, schema_fields=fields)
    path = tmp_path / f"{family}.parquet"
    pq.write_table(table, path)
    assert pq.read_schema(path).field("landcover").type == table.schema.field("landcover").type
    return read_batch_file(path, layer="landcover_points", data_time=T)


CODES = st.lists(
    st.sampled_from(["Forêt", "Marais", "Prairie", "ForÃªt", None]), min_size=1, max_size=12
)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(codes=CODES)
def test_every_arrow_type_family_gets_the_same_verdict(
    tmp_path: Path, codes: list[str | None]
) -> None:
    verdicts = {family: _verdict(_batch_of(tmp_path, codes, family)) for family in FAMILIES}
    assert len(set(verdicts.values())) == 1, verdicts
    admitted = all(c in ("Forêt", "Marais") for c in codes)  # a null breaks the domain too
    assert verdicts["plain"][0] == ("admitted" if admitted else "quarantined")


@pytest.mark.parametrize("family", ["view", "large", "dictionary"])
def test_a_polars_style_geoparquet_breaks_the_domain_not_the_evaluation(
    tmp_path: Path, family: str
) -> None:
    # T06 kind: a Polars-written GeoParquet (string_view) was "evaluation error:
    # ArrowNotImplementedError"; now the unknown code breaks the clause by name
    batch = _batch_of(tmp_path, ["Forêt", "Prairie", None], family)
    assert batch.attributes.schema.field("landcover").type == pa.string()
    assert batch.attributes.schema.field("tags").type == pa.list_(pa.field("element", pa.string()))
    decision = evaluate(batch, [active(CONTRACT)], now=T)
    (domain,) = [r for r in decision.verdicts[0].clauses if r.name == "landcover"]
    assert domain.result == "break" and "evaluation error" not in json.dumps(
        domain.measured, default=str
    )
    assert "Prairie" in json.dumps(domain.measured, ensure_ascii=False, default=str)


@pytest.mark.parametrize(
    ("given", "plain"),
    [
        (pa.string_view(), pa.string()),
        (pa.large_binary(), pa.binary()),
        (pa.binary_view(), pa.binary()),
        (pa.run_end_encoded(pa.int32(), pa.float64()), pa.float64()),
        (pa.dictionary(pa.int8(), pa.large_string()), pa.string()),
        (pa.large_list(pa.string_view()), pa.list_(pa.string())),
        (pa.list_view(pa.binary_view()), pa.list_(pa.binary())),
        (pa.large_list_view(pa.int64()), pa.list_(pa.int64())),
        (
            pa.struct([("a", pa.string_view()), ("b", pa.large_list(pa.int8()))]),
            pa.struct([("a", pa.string()), ("b", pa.list_(pa.int8()))]),
        ),
        (pa.map_(pa.string_view(), pa.large_string()), pa.map_(pa.string(), pa.string())),
        (pa.list_(pa.string_view(), 2), pa.list_(pa.string(), 2)),
        (pa.timestamp("ms", "UTC"), pa.timestamp("ms", "UTC")),
    ],
)
def test_canonical_type_covers_nested_types(given: pa.DataType, plain: pa.DataType) -> None:
    assert canonical_type(given) == plain


def test_every_reader_returns_canonical_text(tmp_path: Path) -> None:
    # GeoParquet with view types, GeoJSON, and a GeoPackage (pyogrio reads text as large_string)
    table = _table(["Forêt", None], "view")
    paths = {"parquet": tmp_path / "b.parquet", "geojson": tmp_path / "b.geojson"}
    pq.write_table(table, paths["parquet"])
    feats = [
        {
            "type": "Feature",
            "properties": {"landcover": c, "tags": [c]},
            "geometry": {"type": "Point", "coordinates": [10, 50]},
        }
        for c in ("Forêt", "Marais")
    ]
    paths["geojson"].write_text(json.dumps({"type": "FeatureCollection", "features": feats}))
    pyogrio = pytest.importorskip("pyogrio")
    paths["ogr"] = tmp_path / "b.gpkg"
    pyogrio.write_arrow(
        _table(["Forêt", "Marais"], "plain").drop_columns(["tags"]),
        paths["ogr"],
        driver="GPKG",
        geometry_name="geometry",
        geometry_type="Point",
        crs="EPSG:4326",
    )
    assert set(paths) == set(FORMATS)
    for name, path in paths.items():
        attrs = read_features(path).attributes
        for field in attrs.schema:
            assert canonical_type(field.type) == field.type, (name, field)
        assert attrs.column("landcover").to_pylist()[0] == "Forêt"


def test_text_that_is_not_utf8_never_reaches_an_evaluator() -> None:
    bad = pa.array([b"ok", b"For\xeat"]).cast(pa.string(), safe=False)
    table = pa.table({"landcover": bad, "tags": pa.array([["x"], [None]])})
    with pytest.raises(
        UndecodableText,
        match=r"b\.parquet: column 'landcover' holds text that is not UTF-8 at row 1 "
        r"\(b'For\\xeat'\)",
    ):
        canonical_table(table, "b.parquet")
    nested = pa.table(
        {
            "tags": pa.array([[b"\xff"]], pa.list_(pa.binary())).cast(
                pa.list_(pa.string()), safe=False
            )
        }
    )
    with pytest.raises(UndecodableText, match=r"'tags' .* at a nested value"):
        canonical_table(nested, "b.parquet")
