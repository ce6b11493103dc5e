"""Parse contract documents into :class:`worker.core.model.Contract` (docs/design.md section 3).

A contract document is YAML; :func:`parse_contract` checks it (safe YAML in
:mod:`~worker.core.contracts.yaml_doc`, JSON Schema draft 2020-12 of
``schemas/contract.schema.json`` in :mod:`~worker.core.contracts.schema`, then the checks of
:mod:`~worker.core.contracts.semantic`) and
turns it into a frozen :class:`~worker.core.model.Contract` with its digest. Every problem
raises :class:`worker.core.errors.ContractError` whose message names the source, the JSON path
of the field (``clauses[3].max_age``), what is wrong and the fix.

Domain codes keep their YAML type: ``1: x`` is the integer code ``1``, ``"01": x`` the
string code ``"01"``. The digest tags each code with its type, so the two never collide.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import yaml

from worker.core.clauses import KINDS
from worker.core.contracts.finite import _check_finite
from worker.core.contracts.fixes import _fail
from worker.core.contracts.schema import _COMMON, _describe, _for_schema, _validator, schema_valid
from worker.core.contracts.semantic import _check_keys, _semantic_checks
from worker.core.contracts.yaml_doc import _construct_mapping, _UniqueKeyLoader, load_document
from worker.core.errors import ContractError
from worker.core.model import Clause, Contract

__all__ = [
    "MAX_CLAUSES",
    "canonical_json",
    "contract_digest",
    "contract_to_document",
    "parse_contract",
]

#: Most clauses a contract may have, checked before the JSON Schema validation: validating
#: one clause costs about 3.5 ms (jsonschema's ``unevaluatedProperties``), so a 700 KB
#: document of 12,000 one-line clauses took 21 s to refuse, stalling every worker that read
#: it from the config topic (issue 30). Real contracts have tens of clauses.
MAX_CLAUSES = 256


_UniqueKeyLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    _construct_mapping,
)


def parse_contract(text: str, *, source: str = "<string>") -> Contract:
    """Parse and validate one contract document.

    Parameters
    ----------
    text : str
        The YAML document (kept unchanged as ``Contract.text``).
    source : str
        Name used in error messages, usually the file path.

    Returns
    -------
    Contract
        ``version`` canonical (``v7`` -> ``v7.0``), ``cadence_s`` in seconds, clauses with
        ``on_break`` defaulted to ``halt`` and kind-specific fields in ``params``.

    Raises
    ------
    ContractError
        Unreadable YAML (also: larger than 1 MiB, more than :data:`MAX_CLAUSES` clauses,
        anchors or aliases, domain codes YAML
        1.1 would retype such as unquoted ``010``), a schema violation, a bad duration, a
        duplicate clause name, an unresolvable CRS or a malformed or out-of-range region
        (non-finite, beyond ±180/±90 degrees, far outside a projected CRS's area of use);
        the message names ``source``, the JSON path of the field and the fix.
    """
    doc = load_document(text, source)
    if not isinstance(doc, dict):
        raise _fail(source, [], "the document is not a mapping", "start with `layer: <name>`")
    _check_keys(doc, source)
    clauses_doc = doc.get("clauses")
    if isinstance(clauses_doc, list) and len(clauses_doc) > MAX_CLAUSES:
        raise _fail(
            source,
            ["clauses"],
            f"{len(clauses_doc)} clauses, more than the {MAX_CLAUSES} a contract may have",
            "split the layer's checks, or merge clauses of one kind",
        )
    _check_finite(doc, source)
    shaped = _for_schema(doc)
    errors = (
        []
        if schema_valid(shaped)
        else sorted(
            _validator().iter_errors(shaped),
            # a wrong clause kind explains the "unknown field" errors of that clause: lead with it
            key=lambda e: (
                not (e.absolute_path and e.absolute_path[-1] == "kind"),
                len(e.absolute_path) == 0,
                [str(p) for p in e.absolute_path],
            ),
        )
    )
    described = [d for d in (_describe(e, doc) for e in errors) if d is not None]
    if described:
        first = _fail(source, *described[0])
        if len(described) > 1:
            more = "; ".join(str(_fail("", *d))[2:] for d in described[1:4])
            first = ContractError(
                f"{first} (and {len(described) - 1} more: {more})", field=first.field, fix=first.fix
            )
        raise first
    cadence_s = _semantic_checks(doc, source)
    major_s, _, minor_s = doc["version"][1:].partition(".")
    major, minor = int(major_s), int(minor_s or 0)
    clauses = tuple(
        Clause(
            name=c["name"],
            kind=c["kind"],
            on_break=c.get("on_break", "halt"),
            description=c.get("description"),
            params={k: v for k, v in c.items() if k not in _COMMON},
        )
        for c in doc["clauses"]
    )
    for clause in clauses:  # each clause's typed parameters, built once, here
        KINDS[clause.kind].params(clause)
    contract = Contract(
        layer=doc["layer"],
        version=f"v{major}.{minor}",
        major=major,
        minor=minor,
        cadence=doc["cadence"],
        cadence_s=cadence_s,
        objective=float(doc["objective"]),
        owner=doc["owner"],
        changelog=doc["changelog"],
        clauses=clauses,
        digest="",
        text=text,
        change=doc.get("change"),
        declared_mode=doc.get("mode"),
        evidence=doc.get("evidence"),
        read_paths=doc.get("read_paths", "shared"),
        id_column=doc.get("id_column"),
    )
    return _with_digest(contract)


def _with_digest(contract: Contract) -> Contract:
    from dataclasses import replace

    return replace(contract, digest=contract_digest(contract))


def contract_to_document(contract: Contract) -> dict[str, Any]:
    """The normalised document of ``contract`` (canonical version, defaults filled).

    ``read_paths`` is included when ``per_major`` (so documents without it keep their
    digests); the review metadata ``change``, ``mode`` and ``evidence`` never are
    (:class:`~worker.core.model.Contract`). Domain codes keep their Python type (int or
    str), so the result is YAML-ready but not necessarily JSON-ready; see
    :func:`canonical_json` for the tagged JSON form.
    """
    clauses = []
    for c in contract.clauses:
        d: dict[str, Any] = {"name": c.name, "kind": c.kind, "on_break": c.on_break}
        if c.description is not None:
            d["description"] = c.description
        d.update(c.params)
        clauses.append(d)
    doc: dict[str, Any] = {
        "layer": contract.layer,
        "version": contract.version,
        "cadence": contract.cadence,
        "objective": contract.objective,
        "owner": contract.owner,
        "changelog": contract.changelog,
        "clauses": clauses,
        # only when set: the digest of every document without it stays what it was
        **({"id_column": contract.id_column} if contract.id_column is not None else {}),
    }
    if contract.read_paths != "shared":
        doc["read_paths"] = contract.read_paths
    return doc


def _tagged(value: Any, *, in_values: bool = False) -> Any:
    if isinstance(value, dict):
        if in_values:
            return {f"{type(k).__name__}:{k}": _tagged(v) for k, v in value.items()}
        return {k: _tagged(v, in_values=(k == "values")) for k, v in value.items()}
    if isinstance(value, list):
        return [_tagged(v) for v in value]
    return value


def canonical_json(document: dict[str, Any]) -> str:
    """Canonical JSON text of a normalised document (sorted keys, no spaces).

    Domain codes are rendered type-tagged (``int:1``, ``str:1``) so that an integer code
    and a string code of the same spelling differ.
    """
    return json.dumps(_tagged(document), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def contract_digest(contract: Contract) -> str:
    """sha256 (hex) of :func:`canonical_json` of :func:`contract_to_document`."""
    return hashlib.sha256(canonical_json(contract_to_document(contract)).encode()).hexdigest()
