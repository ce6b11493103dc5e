"""Each package face exports exactly its public names, and every exported name resolves.

A package whose ``__init__`` re-exports its submodules' names (``worker.core.spatial``
since issue 25), or a facade module that does (``worker.core.facts.batch``), pins its
``__all__`` here, as httpx's ``tests/test_exported_members.py``
does: a name added to or dropped from a face is a decision, made in this file too.
"""

from __future__ import annotations

import importlib

import pytest

FACES: dict[str, set[str]] = {
    "worker.core.facts.batch": {
        "MAX_REASONS",
        "BatchFacts",
        "edges_problem",
        "nonfinite_mask",
        "schema_fingerprint",
    },
    "worker.core.spatial": {
        "AREA_OF_USE_MARGIN_DEG",
        "CrsInput",
        "area_m2_or_units",
        "area_of_use",
        "cached_transformer",
        "covered_mask",
        "crs_equivalent",
        "crs_label",
        "densify_for_transform",
        "densify_spherical",
        "fraction_covered",
        "geographic_base",
        "outside_area_of_use",
        "region_geometry",
        "reproject",
        "reproject_to_lonlat",
        "resolve_crs",
        "split_at_antimeridian",
        "swap_xy",
    },
}


@pytest.mark.parametrize("face", sorted(FACES))
def test_face_exports_exactly_its_names(face: str) -> None:
    module = importlib.import_module(face)
    assert set(module.__all__) == FACES[face]
    assert len(module.__all__) == len(set(module.__all__)), "a name is listed twice"


@pytest.mark.parametrize("face", sorted(FACES))
def test_every_exported_name_resolves(face: str) -> None:
    module = importlib.import_module(face)
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert missing == []


@pytest.mark.parametrize("face", sorted(FACES))
def test_submodules_export_what_they_define(face: str) -> None:
    """Each name of a face comes from a submodule that lists it in its own ``__all__``."""
    module = importlib.import_module(face)
    for name in module.__all__:
        owner = getattr(module, name)
        home = getattr(owner, "__module__", None)
        package = face.rpartition(".")[0] if face.endswith(".batch") else face
        if home is None or home == face or not home.startswith(package + "."):
            continue  # a constant or an alias: no __module__ of its own
        assert name in importlib.import_module(home).__all__, f"{home} does not export {name}"
