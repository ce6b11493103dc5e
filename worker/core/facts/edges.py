"""Whether a batch's edge model can be honoured (pure): :func:`edges_problem`.

A file may state how its geometries' edges run (``edges``: ``planar``, straight lines in
the CRS, or ``spherical``, great-circle arcs); spherical edges need longitude/latitude
coordinates. Read by :attr:`worker.core.facts.parse.ParsedFacts.edges_problem` for a
whole batch and by :mod:`worker.core.chunks` for a batch read in chunks (re-exported by
the :mod:`worker.core.facts.batch` face).
"""

from __future__ import annotations

from pyproj import CRS

from worker.core.model import stated
from worker.core.spatial.crs import crs_label

__all__ = ["edges_problem"]


def edges_problem(edges: str, crs: CRS | None, lonlat: bool, name: str = "") -> str | None:
    """Why a batch's edge model cannot be honoured, or None; ``name`` is the batch's
    :attr:`~worker.core.model.Batch.metadata_name`, naming the statement in messages.

    ``edges: spherical`` needs longitude/latitude coordinates: a geographic declared
    ``crs``, or an undeclared one with features whose every coordinate is within ±180, ±90
    (``lonlat``: :attr:`~worker.core.facts.batch.BatchFacts.lonlat_fits` of a batch with
    features). Any ``edges`` value other than ``planar`` or ``spherical`` is unsupported.
    """
    if edges == "planar":
        return None
    if edges != "spherical":
        return (
            f"{stated(name, 'edges')} {edges!r} is not supported (the edge models are "
            "'planar' and 'spherical'): the geometries cannot be evaluated"
        )
    if crs is not None and crs.is_geographic:
        return None
    if crs is None and lonlat:
        return None
    where = crs_label(crs) if crs is not None else "an undeclared CRS"
    return (
        f"{stated(name, 'edges')} 'spherical' (great-circle arcs) with coordinates in {where}: "
        "spherical edges need longitude/latitude; write the file in a geographic CRS "
        "or with edges 'planar'"
    )
