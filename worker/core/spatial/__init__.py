"""CRS resolution and equivalence, transformers, regions and areas (pure, cached).

Conventions written down once:

* Every coordinate array handled here is in ``east_north`` order: x is longitude/easting,
  y is latitude/northing (the order of OGC:CRS84 and RFC 7946). Transformers are built with
  ``always_xy=True`` so they honour that order whatever the CRS authority says.
* Regions (bbox lists or WKT) are written in the contract CRS, in ``east_north`` order.
* Areas are m² for a geographic CRS (geodesic, on the CRS's ellipsoid) and CRS units squared
  for a projected CRS (planar); see :func:`worker.core.spatial.regions.area_m2_or_units`.

One module per family (shapely's layout); import from them:

* :mod:`.crs`: resolve_crs, crs_equivalent, crs_label, cached_transformer, area of use;
* :mod:`.reproject`: swap_xy, densify_for_transform, reproject, reproject_to_lonlat;
* :mod:`.antimeridian`: split_at_antimeridian, polar caps;
* :mod:`.spherical`: densify_spherical (great-circle edges);
* :mod:`.regions`: region_geometry, area_m2_or_units, covered_mask, fraction_covered.

This package re-exports their public names.
"""

from __future__ import annotations

from worker.core.spatial.antimeridian import split_at_antimeridian
from worker.core.spatial.crs import (
    AREA_OF_USE_MARGIN_DEG,
    CrsInput,
    area_of_use,
    cached_transformer,
    crs_equivalent,
    crs_label,
    geographic_base,
    outside_area_of_use,
    resolve_crs,
)
from worker.core.spatial.regions import (
    area_m2_or_units,
    covered_mask,
    fraction_covered,
    region_geometry,
)
from worker.core.spatial.reproject import (
    densify_for_transform,
    reproject,
    reproject_to_lonlat,
    swap_xy,
)
from worker.core.spatial.spherical import densify_spherical

__all__ = [
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
]
