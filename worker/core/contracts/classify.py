"""Change classification between two versions of a layer's contract (pure; DESIGN.md §4).

Clauses are compared by name. Every difference gets a class and a one-line reason; the
overall class is the most severe one (``major`` > ``tightening`` > ``minor`` > ``none``):

* **major**: the CRS is not equivalent (by pyproj), the crs clause is removed, added to a
  contract that had none, or turned from ``halt`` to ``warn``; the same for axis order;
  an extent (or coverage) region is redrawn (by
  shapely geometry equality, not by text); a domain code's meaning or the domain column
  changes; a schema field is removed, renamed or retyped; a clause changes kind.
* **tightening**: domain codes or geometry types removed (the coordinate dimension is part
  of the type: ``Point`` -> ``Point Z`` removes ``Point`` and adds ``Point Z``); ``allow_*``
  true -> false; any bound made stricter; a new required schema field; a new clause;
  ``on_break`` warn -> halt.
* **minor**: the reverse of each tightening; a new nullable field; a clause removed (other
  than crs/axis_order); owner, description, changelog, objective, cadence, read_paths
  edits. The declared ``change`` and the review metadata ``mode`` and ``evidence`` are
  not differences.
* **none**: identical content (same digest). A difference that changes nothing evaluated,
  e.g. the spelling of an equivalent CRS (``EPSG:3857`` -> ``ESRI:102100``) or a region
  rewritten as the same geometry, is listed with class ``none``; the document still
  changed, so the overall class of two documents with different digests is at least
  ``minor``.

Both documents must be versions of one layer: other layers are refused.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import shapely

from worker.core._util.durations import parse_duration_s
from worker.core.errors import ContractGateError
from worker.core.model import Clause, Contract
from worker.core.spatial import crs_equivalent, resolve_crs

__all__ = [
    "CLASSES",
    "Classification",
    "Difference",
    "classification_to_json",
    "classify",
    "most_severe",
    "render_classification",
]

#: Change classes, least severe first.
CLASSES: tuple[str, ...] = ("none", "minor", "tightening", "major")
_RANK = {c: i for i, c in enumerate(CLASSES)}
_DOC = "(document)"


@dataclass(frozen=True)
class Difference:
    """One difference between two versions: the clause (or ``(document)``), its kind, the
    class of the change and a one-line reason."""

    clause: str
    kind: str
    class_: str
    reason: str


@dataclass(frozen=True)
class Classification:
    """The overall class of a change (the most severe difference) and every difference."""

    class_: str
    differences: tuple[Difference, ...]


def most_severe(classes: list[str] | tuple[str, ...]) -> str:
    """The most severe of ``classes`` (``none`` for an empty list)."""
    return max(classes, key=_RANK.__getitem__, default="none")


def _crs_same(a: Any, b: Any) -> bool:
    if a == b:
        return True
    if a is None or b is None:
        return False
    try:
        return crs_equivalent(a, b)
    except ContractGateError:
        return False


def _region_geometry(region: Any, crs: Any) -> shapely.Geometry | None:
    from worker.core.spatial import region_geometry

    try:
        resolved = resolve_crs(crs) if crs is not None else None
    except ContractGateError:
        resolved = None
    try:
        return region_geometry(region, resolved)
    except ValueError:
        return None


def _regions_equal(a: Any, crs_a: Any, b: Any, crs_b: Any) -> bool:
    if a == b:
        return True
    ga, gb = _region_geometry(a, crs_a), _region_geometry(b, crs_b)
    if ga is None or gb is None:
        return False
    return bool(ga.equals(gb))


class _Diff:
    """Collects the differences of one clause pair."""

    def __init__(self, name: str, kind: str) -> None:
        self.name, self.kind = name, kind
        self.out: list[Difference] = []

    def add(self, class_: str, reason: str) -> None:
        self.out.append(Difference(self.name, self.kind, class_, reason))

    def bound(
        self,
        field: str,
        old: Any,
        new: Any,
        *,
        stricter_when: str,
        convert: Callable[[Any], float] = float,
    ) -> None:
        """A numeric bound; ``stricter_when`` is ``lower`` or ``higher`` (new vs old)."""
        if old == new:
            return
        if old is None or new is None:
            what = "added" if old is None else "removed"
            cls = "tightening" if old is None else "minor"
            self.add(cls, f"{field} bound {what} ({old} -> {new})")
            return
        lower = convert(new) < convert(old)
        if convert(new) == convert(old):
            self.add("minor", f"{field} rewritten with the same value ({old} -> {new})")
            return
        stricter = lower if stricter_when == "lower" else not lower
        self.add(
            "tightening" if stricter else "minor",
            f"{field} {old} -> {new} ({'stricter' if stricter else 'looser'})",
        )

    def flag(self, field: str, old: bool, new: bool) -> None:
        """An ``allow_*`` flag: true -> false tightens, false -> true loosens."""
        if bool(old) != bool(new):
            self.add(
                "minor" if new else "tightening",
                f"{field} {str(bool(old)).lower()} -> {str(bool(new)).lower()}",
            )


def _params(c: Clause) -> Mapping[str, Any]:
    return c.params


def _compare_clause(old: Clause, new: Clause, old_c: Contract, new_c: Contract) -> list[Difference]:
    d = _Diff(new.name, new.kind)
    if old.kind != new.kind:
        d.add("major", f"kind changed under the same name ({old.kind} -> {new.kind})")
        return d.out
    p, q = _params(old), _params(new)
    kind = new.kind
    handled: set[str] = set()
    if kind == "crs":
        handled = {"expect"}
        if p["expect"] != q["expect"]:
            if _crs_same(p["expect"], q["expect"]):
                d.add("none", f"equivalent CRS, spelling changed ({p['expect']} -> {q['expect']})")
            else:
                d.add("major", f"CRS not equivalent ({p['expect']} -> {q['expect']})")
    elif kind == "axis_order":
        handled = {"expect"}
        if p["expect"] != q["expect"]:
            d.add("major", f"axis order changed ({p['expect']} -> {q['expect']})")
    elif kind in ("extent", "coverage"):
        handled = {"region", "crs", "min_fraction_inside", "tolerance", "min_fraction"}
        handled.add("expected_features")
        crs_p = p.get("crs") or _contract_crs(old_c)
        crs_q = q.get("crs") or _contract_crs(new_c)
        shown = f"{_crs_words(crs_p)} -> {_crs_words(crs_q)}"
        if p.get("crs") != q.get("crs") and not _crs_same(crs_p, crs_q):
            d.add("major", f"region CRS not equivalent ({shown})")
        elif p.get("crs") != q.get("crs"):
            d.add("none", f"region CRS spelled differently, equivalent ({shown})")
        if p.get("region") != q.get("region"):
            if p.get("region") is None or q.get("region") is None:
                d.add("major", f"{kind} region {'added' if p.get('region') is None else 'removed'}")
            elif _regions_equal(p["region"], crs_p, q["region"], crs_q):
                d.add("none", f"{kind} region rewritten, same geometry")
            else:
                d.add("major", f"{kind} region redrawn")
        if kind == "extent":
            d.bound(
                "min_fraction_inside",
                p.get("min_fraction_inside", 1.0),
                q.get("min_fraction_inside", 1.0),
                stricter_when="higher",
            )
            d.bound(
                "tolerance", p.get("tolerance", 0), q.get("tolerance", 0), stricter_when="lower"
            )
        else:
            d.bound("min_fraction", p["min_fraction"], q["min_fraction"], stricter_when="higher")
            d.bound(
                "expected_features",
                p.get("expected_features"),
                q.get("expected_features"),
                stricter_when="higher",
            )
    elif kind == "geometry_type":
        handled = {"allowed", "allow_empty"}
        ta, tb = set(p["allowed"]), set(q["allowed"])
        if ta - tb:
            d.add("tightening", f"geometry types removed: {_types_shown(ta - tb, tb, 'stays')}")
        if tb - ta:
            d.add("minor", f"geometry types added: {_types_shown(tb - ta, tb, 'also')}")
        d.flag("allow_empty", p.get("allow_empty", False), q.get("allow_empty", False))
    elif kind == "validity":
        handled = {"max_invalid_fraction"}
        d.bound(
            "max_invalid_fraction",
            p["max_invalid_fraction"],
            q["max_invalid_fraction"],
            stricter_when="lower",
        )
    elif kind == "domain":
        handled = {"column", "values", "allow_null"}
        if p["column"] != q["column"]:
            d.add("major", f"domain column changed ({p['column']} -> {q['column']})")
        a, b = dict(p["values"]), dict(q["values"])
        changed = sorted((k for k in a.keys() & b.keys() if a[k] != b[k]), key=repr)
        if changed:
            d.add(
                "major",
                "code meaning changed: "
                + "; ".join(f"{k!r}: {a[k]!r} -> {b[k]!r}" for k in changed),
            )
        removed = sorted(a.keys() - b.keys(), key=repr)
        added = sorted(b.keys() - a.keys(), key=repr)
        if removed:
            d.add("tightening", f"domain codes removed: {', '.join(map(repr, removed))}")
        if added:
            d.add("minor", f"domain codes added: {', '.join(map(repr, added))}")
        d.flag("allow_null", p.get("allow_null", False), q.get("allow_null", False))
    elif kind == "freshness":
        handled = {"max_age", "max_clock_skew"}
        d.bound(
            "max_age", p["max_age"], q["max_age"], stricter_when="lower", convert=parse_duration_s
        )
        d.bound(
            "max_clock_skew",
            p.get("max_clock_skew", "PT5M"),
            q.get("max_clock_skew", "PT5M"),
            stricter_when="lower",
            convert=parse_duration_s,
        )
    elif kind == "schema":
        handled = {"fields", "allow_extra"}
        a = {f["name"]: f for f in p["fields"]}
        b = {f["name"]: f for f in q["fields"]}
        gone = sorted(a.keys() - b.keys())
        new_fields = sorted(b.keys() - a.keys())
        for name in gone:
            d.add("major", f"field {name!r} removed or renamed")
        for name in new_fields:
            if b[name].get("nullable", False):
                d.add("minor", f"new nullable field {name!r}")
            else:
                d.add("tightening", f"new required field {name!r} ({b[name]['type']})")
        for name in sorted(a.keys() & b.keys()):
            fa, fb = a[name], b[name]
            if fa["type"] != fb["type"]:
                d.add("major", f"field {name!r} retyped ({fa['type']} -> {fb['type']})")
            na, nb = bool(fa.get("nullable", False)), bool(fb.get("nullable", False))
            if na != nb:
                d.add(
                    "minor" if nb else "tightening",
                    f"field {name!r} nullable {str(na).lower()} -> {str(nb).lower()}",
                )
        d.flag("allow_extra", p.get("allow_extra", False), q.get("allow_extra", False))
    elif kind == "feature_count":
        handled = {"min", "max"}
        d.bound("min", p.get("min"), q.get("min"), stricter_when="higher")
        d.bound("max", p.get("max"), q.get("max"), stricter_when="lower")
    for key in sorted((set(p) | set(q)) - handled):
        if p.get(key) != q.get(key):
            d.add("minor", f"{key} changed ({p.get(key)!r} -> {q.get(key)!r})")
    if old.on_break != new.on_break:
        if new.on_break == "halt":
            change = "tightening"
        elif kind in ("crs", "axis_order"):  # drops the guarantee, as removing the clause
            change = "major"
        else:
            change = "minor"
        d.add(change, f"on_break {old.on_break} -> {new.on_break}")
    if old.description != new.description:
        d.add("minor", "description edited")
    return d.out


_DIMENSION_NAMES = {"": "XY", "Z": "XYZ", "M": "XYM", "ZM": "XYZM"}


def _types_shown(changed: set[str], now_allowed: set[str], verb: str) -> str:
    """Changed geometry type names, each with its coordinate dimension and the dimensions
    the new version still allows of the same base type (GeoParquet ``geometry_types``
    names: ``Polygon`` is XY only, ``Polygon Z`` XYZ): a dimension added is a type added,
    a dimension removed a type removed."""
    out = []
    for name in sorted(changed):
        base, _, dim = name.partition(" ")
        same_base = sorted(
            _DIMENSION_NAMES.get(o.partition(" ")[2], "?")
            for o in now_allowed
            if o.partition(" ")[0] == base and o != name
        )
        note = _DIMENSION_NAMES.get(dim, dim)
        if same_base:
            note += f"; {base} {verb} allowed as {', '.join(same_base)}"
        out.append(f"{name} ({note})")
    return ", ".join(out)


#: How a region CRS that neither the clause nor a crs clause declares is shown: such a
#: region is read in each batch's declared CRS (:func:`worker.core.clauses.kinds.contract_crs`).
UNDECLARED_REGION_CRS = "undeclared: the batch's declared CRS"


def _crs_words(crs: Any) -> str:
    return UNDECLARED_REGION_CRS if crs is None else str(crs)


def _contract_crs(c: Contract) -> Any:
    """The CRS the contract's regions are written in: its crs clause's ``expect``."""
    for clause in c.clauses:
        if clause.kind == "crs":
            return clause.params.get("expect")
    return None


def classify(old: Contract, new: Contract) -> Classification:
    """Classify the change ``old`` -> ``new`` of one layer's contract (DESIGN.md §4).

    Parameters
    ----------
    old, new : Contract
        Two versions of the same layer (the version numbers themselves are not compared).

    Returns
    -------
    Classification
        The most severe class and every difference, document-level first, then clauses in
        the order of ``new`` (removed clauses last, in the order of ``old``). ``none`` only
        for the same digest; otherwise at least ``minor``, even when every difference is
        of class ``none`` (DESIGN.md section 4: none = identical content).

    Raises
    ------
    ContractGateError
        ``old`` and ``new`` are versions of different layers.
    """
    if old.layer != new.layer:
        raise ContractGateError(
            f"different layers: {old.layer} vs {new.layer}; classification compares "
            "versions of one layer"
        )
    if old.digest == new.digest:
        return Classification("none", ())
    diffs: list[Difference] = []
    for field in ("owner", "changelog", "id_column"):
        if getattr(old, field) != getattr(new, field):
            diffs.append(Difference(_DOC, field, "minor", f"{field} edited"))
    if old.objective != new.objective:
        diffs.append(
            Difference(_DOC, "objective", "minor", f"objective {old.objective} -> {new.objective}")
        )
    if old.cadence_s != new.cadence_s:
        diffs.append(
            Difference(_DOC, "cadence", "minor", f"cadence {old.cadence} -> {new.cadence}")
        )
    if old.read_paths != new.read_paths:
        diffs.append(
            Difference(
                _DOC,
                "read_paths",
                "minor",
                f"read_paths {old.read_paths} -> {new.read_paths} (where admitted batches are "
                "written, not what is admitted)",
            )
        )
    # the review metadata (declared ``change``, ``mode``, ``evidence``) are statements
    # about the change, not content, and outside the digest: never a difference
    for clause in new.clauses:
        before = old.clause(clause.name)
        if before is None:
            # a CRS or axis-order expectation where there was none is a CRS change (the
            # regions of clauses without their own CRS move to it): major, as its removal
            first = clause.kind in ("crs", "axis_order") and not any(
                c.kind == clause.kind for c in old.clauses
            )
            diffs.append(
                Difference(
                    clause.name,
                    clause.kind,
                    "major" if first else "tightening",
                    f"new {clause.kind} clause",
                )
            )
        else:
            diffs += _compare_clause(before, clause, old, new)
    for clause in old.clauses:
        if new.clause(clause.name) is None:
            if clause.kind in ("crs", "axis_order"):
                diffs.append(
                    Difference(clause.name, clause.kind, "major", f"{clause.kind} clause removed")
                )
            else:
                diffs.append(
                    Difference(clause.name, clause.kind, "minor", f"{clause.kind} clause removed")
                )
    if not diffs:
        same_number = old.version == new.version
        diffs.append(
            Difference(
                _DOC,
                "document",
                "none",
                # a file of the same version number written differently (1 for 1.0, a
                # list reordered) was called "renumbered" (a fresh-user finding)
                "no clause or metadata change: the same content written differently (a "
                "number such as 1 for 1.0, a list in another order); still another "
                "document (digest): publish the published text, or give it a new version"
                if same_number
                else "no clause or metadata change (renumbered)",
            )
        )
    # another digest is another document: never "none" overall (section 4)
    overall = most_severe([d.class_ for d in diffs] + ["minor"])
    return Classification(overall, tuple(diffs))


def classification_to_json(c: Classification) -> dict[str, Any]:
    """``{"class": ..., "differences": [{"clause", "kind", "class", "reason"}]}``."""
    return {
        "class": c.class_,
        "differences": [
            {"clause": d.clause, "kind": d.kind, "class": d.class_, "reason": d.reason}
            for d in c.differences
        ],
    }


def render_classification(c: Classification, title: str = "") -> str:
    """Readable text: the class, then one line per difference."""
    lines = [f"{title}{': ' if title else ''}change class {c.class_}"]
    if not c.differences:
        lines.append("  no differences (identical content)")
    width = max((len(d.clause) for d in c.differences), default=0)
    for d in c.differences:
        lines.append(f"  {d.class_:<10} {d.clause:<{width}}  {d.kind:<13} {d.reason}")
    return "\n".join(lines)
