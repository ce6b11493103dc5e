"""Units of a CRS's coordinates, named from the CRS's axes, never from its name.

A CRS's name is a label a producer or a WKT dialect chose: PROJ imports the ESRI ``.prj``
``NAD_1983_StatePlane_New_York_Long_Island_FIPS_3104_Feet`` with ``UNIT["Foot",0.3048]``
(the international foot) as "NAD83 / New York Long Island (ftUS)" (the US survey foot,
0.3048006096 m: 2 ppm apart, about 2 ft at a million feet; field case T14). The unit and its
conversion factor (to metres, or to radians for angles) come from the coordinate system's
first axis (OGC 18-010r7, WKT2 section 7.4 "Unit": each axis carries its unit).
"""

from __future__ import annotations

import re

from pyproj import CRS

__all__ = ["axis_unit", "coordinate_units", "relabel_units", "units_differ"]

#: plural of the angular units a geographic CRS may use (its axes' unit names)
_ANGLES = {"degree": "degrees", "grad": "grads", "gon": "gons", "radian": "radians"}
#: a unit tag at the end of a CRS name: "(ftUS)", "(ft)", "(m)", "(US survey foot)", ...
_UNIT_TAG = re.compile(
    r"\s*\((?:ftUS|ft|usft|US ?ft|feet|foot|m|km|metre|meter|US survey foot|ftIn|ftCla)\)\s*$",
    re.IGNORECASE,
)


def axis_unit(crs: CRS) -> tuple[str, float] | None:
    """The first axis's unit name and conversion factor (to metres for a length, to
    radians for an angle), or None when the CRS has no axes."""
    axes = crs.axis_info
    if not axes or not axes[0].unit_name:
        return None
    return str(axes[0].unit_name), float(axes[0].unit_conversion_factor)


def coordinate_units(crs: CRS | None) -> str:
    """The unit of a CRS's coordinates in words: ``degrees`` (``grads``, ``radians``...)
    for a geographic CRS, the unit's name for another (``metre``, ``US survey foot``);
    ``CRS units`` when unknown."""
    unit = axis_unit(crs) if crs is not None else None
    if unit is None:
        return "CRS units"
    if crs is not None and crs.is_geographic:
        return _ANGLES.get(unit[0].lower(), unit[0])
    return unit[0]


def _factor(crs: CRS, unit: tuple[str, float]) -> str:
    per = "rad" if crs.is_geographic else "m"
    return f"{unit[1]:.10g} {per}"


def relabel_units(name: str, crs: CRS) -> str:
    """``name`` with a trailing unit tag replaced by the unit of the CRS's axes
    (``NAD83 / New York Long Island (foot, 0.3048 m)``); ``name`` itself without a tag."""
    tag = _UNIT_TAG.search(name)
    unit = axis_unit(crs)
    if tag is None or unit is None or crs.is_geographic:
        return name
    return f"{name[: tag.start()]} ({unit[0]}, {_factor(crs, unit)})"


def units_differ(a: CRS, b: CRS) -> str | None:
    """``units differ: foot (0.3048 m) vs US survey foot (0.3048006096 m)`` when the two
    CRSs' coordinate units differ (by name or by factor), else None."""
    ua, ub = axis_unit(a), axis_unit(b)
    if ua is None or ub is None or a.is_geographic != b.is_geographic:
        return None
    if ua[0] == ub[0] and abs(ua[1] - ub[1]) <= 1e-15 * max(abs(ua[1]), abs(ub[1])):
        return None
    return f"units differ: {ua[0]} ({_factor(a, ua)}) vs {ub[0]} ({_factor(b, ub)})"
