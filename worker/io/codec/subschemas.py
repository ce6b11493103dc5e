"""The codec's Avro schemas read and parsed (at import), and parts of a parsed record
schema as schemas of their own (for :class:`worker.io.codec.avro.RecordParts`): a
record's fields in runs, each field's type with its named types referenced as a parsed
schema holds them."""

from __future__ import annotations

import itertools
import json
from collections.abc import Collection, Mapping, Sequence
from importlib import resources
from typing import Any

import fastavro

__all__ = [
    "BATCH_ARRIVAL",
    "BATCH_ARRIVAL_EDGES",
    "BATCH_ARRIVAL_PLANAR",
    "CONSUMER_DECLARATION",
    "CONTRACT_RECORD",
    "CONTRACT_RECORD_PLAIN",
    "CONTRACT_RECORD_SUPERSEDES",
    "EVALUATION_RECORD",
    "EVALUATION_REPEATED",
    "QUARANTINE_RECORD",
    "check_repeated",
    "referenced",
    "run_schemas",
    "schema_file",
    "split_record",
]


def schema_file(name: str, without: tuple[str, ...] = ()) -> Any:
    """The parsed schema of ``schemas/NAME.avsc``, less its fields named in ``without``."""
    text = resources.files("worker").joinpath(f"schemas/{name}.avsc").read_text("utf-8")
    doc = json.loads(text)
    if without:
        doc["fields"] = [f for f in doc["fields"] if f["name"] not in without]
    return fastavro.parse_schema(doc)


BATCH_ARRIVAL = schema_file("batch_arrival")
#: BatchArrival without the trailing ``edges``, ``orientation`` and ``feature_ids`` fields:
#: what producers wrote before them, and what the gate still writes when they hold their
#: defaults (so readers with the earlier schema keep reading every planar batch byte for
#: byte).
BATCH_ARRIVAL_PLANAR = schema_file("batch_arrival", ("edges", "orientation", "feature_ids"))
#: BatchArrival without the trailing ``feature_ids``: events that carry edges/orientation
#: and no feature ids (written so since those two fields exist).
BATCH_ARRIVAL_EDGES = schema_file("batch_arrival", ("feature_ids",))
QUARANTINE_RECORD = schema_file("quarantine_record")
CONTRACT_RECORD = schema_file("contract_record")
#: ContractRecord without the trailing ``supersedes`` field: what publishers wrote before
#: it, and what is still written when it is empty (records keep their earlier bytes).
CONTRACT_RECORD_PLAIN = schema_file("contract_record", ("supersedes", "record_kind", "builds_on"))
#: ContractRecord up to ``supersedes``: records written before the compaction-proof
#: history (issue 30) that supersede earlier revisions.
CONTRACT_RECORD_SUPERSEDES = schema_file("contract_record", ("record_kind", "builds_on"))
EVALUATION_RECORD = schema_file("evaluation_record")
#: The EvaluationRecord fields whose values repeat within a poll batch, kept per values by
#: :class:`RecordParts` (the batch id and source offset change from record to record), and
#: those of its clause entries (a clause result of each event's own differs in ``measured``).
EVALUATION_REPEATED = (
    "layer", "version", "mode", "passed", "evaluated_at", "data_time", "source_topic",
    "source_partition", "diagnoses",
)  # fmt: skip
CONSUMER_DECLARATION = schema_file("consumer_declaration")


def check_repeated(fields: Any, repeated: Collection[str], what: object) -> None:
    """Raise ValueError unless ``fields`` are a record's and name every one of ``repeated``."""
    if not isinstance(fields, list):
        raise ValueError(f"{what} are not records")
    if unknown := set(repeated) - {f["name"] for f in fields}:
        raise ValueError(f"{what}: no repeated field {sorted(unknown)}")


def run_schemas(
    fields: Sequence[Mapping[str, Any]], repeated: Collection[str], named: dict[str, Any]
) -> list[tuple[bool, tuple[str, ...], tuple[Any, ...]]]:
    """``fields`` of a parsed record schema in order, as runs: consecutive fields named in
    ``repeated`` together, every other field alone. ``(repeated, names, parsed types)``
    of each run (the named types of ``named`` referenced by name)."""
    out = []
    runs = itertools.groupby(fields, lambda f: f["name"] in repeated or f["name"])
    for kept, grouped in runs:
        run = list(grouped)
        types = tuple(fastavro.parse_schema(referenced(f["type"], set()), dict(named)) for f in run)
        out.append((kept is True, tuple(f["name"] for f in run), types))
    return out


def referenced(t: Any, seen: set[str]) -> Any:
    """``t`` with every named type (record, enum, fixed) after its first definition given
    by its full name, and every definition kept once, as in a parsed schema; field
    defaults and logical types kept."""
    if isinstance(t, list):
        return [referenced(b, seen) for b in t]
    if not isinstance(t, dict):
        return t
    out = {k: v for k, v in t.items() if not k.startswith("__")}
    if t.get("type") in ("record", "error", "enum", "fixed") and "name" in t:
        if t["name"] in seen:
            return t["name"]
        seen.add(t["name"])
    if "fields" in out:
        out["fields"] = [{**f, "type": referenced(f["type"], seen)} for f in out["fields"]]
    for key in ("items", "values"):
        if key in out:
            out[key] = referenced(out[key], seen)
    if isinstance(out.get("type"), (dict, list)):
        out["type"] = referenced(out["type"], seen)
    return out


def split_record(
    schema: Mapping[str, Any], field: str, repeated: Collection[str]
) -> tuple[list[Any], list[Any], Any, tuple[tuple[str, ...], tuple[Any, ...]] | None]:
    """A parsed record ``schema`` split around its array field ``field`` (else ValueError,
    as for a ``repeated`` name it has not): the runs before and after it
    (:func:`run_schemas`), the items' parsed schema and, when the items are records, their
    fields' names and parsed types."""
    names = [f["name"] for f in schema["fields"]]
    if field not in names:
        raise ValueError(f"{schema.get('name')} has no field {field!r}")
    k = names.index(field)
    array = schema["fields"][k]["type"]
    if not isinstance(array, dict) or array.get("type") != "array":
        raise ValueError(f"field {field!r} of {schema.get('name')} is not an array")
    named, fields = dict(schema.get("__named_schemas", {})), schema["fields"]
    check_repeated(fields[:k] + fields[k + 1 :], repeated, schema.get("name"))
    items = referenced(array["items"], set())
    item_fields = items.get("fields") if isinstance(items, dict) else None
    typed = [(r[1][0], r[2][0]) for r in run_schemas(item_fields or [], (), named)]
    return (
        run_schemas(fields[:k], repeated, named),
        run_schemas(fields[k + 1 :], repeated, named),
        fastavro.parse_schema(items, dict(named)),
        (tuple(n for n, _ in typed), tuple(t for _, t in typed)) if item_fields else None,
    )
