"""The drafted extent region: the samples' bounds padded, across the antimeridian when the
data cross it, clipped to the CRS's area of use (pure).

Units are those of the contract CRS (degrees for a geographic one). The region never
shrinks below the observed bounds (clipping and rounding go outward), so every sample
feature the extent clause can place is inside it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pyproj import CRS

from worker.core.contracts.lon_cover import LonCover
from worker.core.spatial import area_of_use

__all__ = ["DraftRegion", "draft_region", "number_text"]

#: Smallest padding on each side: a sample of one point still gets a region with area.
MIN_PAD_DEG = 0.001
MIN_PAD_UNITS = 1.0
#: Decimals of the written region: 1e-6 degree is about 0.1 m; 0.01 of a metre or foot.
DECIMALS_DEG = 6
DECIMALS_UNITS = 2


@dataclass(frozen=True)
class DraftRegion:
    """``region`` ``[minx, miny, maxx, maxy]`` as written (``minx > maxx`` crosses the
    antimeridian); ``observed`` the samples' own cover (same form, unpadded);
    ``decimals`` the decimals of both when written; ``clipped`` the sides cut back to the
    CRS's area of use; ``crosses`` the observed data cross the antimeridian."""

    region: tuple[float, float, float, float]
    observed: tuple[float, float, float, float]
    decimals: int
    clipped: tuple[str, ...]
    crosses: bool


def number_text(value: float, decimals: int) -> str:
    """``value`` with at most ``decimals`` decimals, trailing zeros dropped (never an
    exponent: YAML 1.1 reads ``1e-06`` as a string)."""
    text = f"{value:.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _down(v: float, decimals: int) -> float:
    out = math.floor(v * 10**decimals) / 10**decimals
    return out if float(number_text(out, decimals)) <= v else out - 10**-decimals


def _up(v: float, decimals: int) -> float:
    out = math.ceil(v * 10**decimals) / 10**decimals
    return out if float(number_text(out, decimals)) >= v else out + 10**-decimals


def _pad(size: float, margin: float, floor: float) -> float:
    return max(size * margin, floor)


def _lon_range(cover: tuple[float, float], margin: float) -> tuple[float, float, list[str]]:
    """West and east of the padded longitude cover (``west > east`` across 180)."""
    west, east = cover
    crosses = west > east
    width = (east - west) % 360.0 if crosses else east - west
    pad = _pad(width, margin, MIN_PAD_DEG)
    if width + 2 * pad >= 360.0:
        return -180.0, 180.0, ["the whole longitude circle"]
    w, e = west - pad, east + pad
    clipped: list[str] = []
    if not crosses:  # the data stop short of 180: so does the region
        if w < -180.0:
            w, clipped = -180.0, [*clipped, "west"]
        if e > 180.0:
            e, clipped = 180.0, [*clipped, "east"]
        return w, e, clipped
    return (w + 360.0 if w < -180.0 else w), (e - 360.0 if e > 180.0 else e), clipped


def draft_region(
    bounds: tuple[float, float, float, float],
    lon: LonCover | None,
    crs: CRS | None,
    margin: float,
) -> DraftRegion:
    """The region of a drafted extent clause.

    Parameters
    ----------
    bounds : (minx, miny, maxx, maxy)
        The samples' envelope, ``east_north``, in ``crs`` units.
    lon : LonCover, optional
        The longitudes occupied (a geographic ``crs``): the region then takes the
        shortest cover of them, across the antimeridian when that is shorter.
    crs : pyproj.CRS, optional
        The contract CRS; None when the samples state none (no clipping).
    margin : float
        Fraction of the width and of the height added on each side (0.05: 5 %).
    """
    geographic = crs is not None and crs.is_geographic
    decimals = DECIMALS_DEG if geographic else DECIMALS_UNITS
    floor = MIN_PAD_DEG if geographic else MIN_PAD_UNITS
    minx, miny, maxx, maxy = bounds
    cover = lon.cover() if (geographic and lon is not None) else None
    obs_w, obs_e = cover if cover is not None else (minx, maxx)
    crosses = obs_w > obs_e
    ypad = _pad(maxy - miny, margin, floor)
    y0, y1 = miny - ypad, maxy + ypad
    clipped: list[str] = []
    if cover is not None:
        x0, x1, clipped = _lon_range(cover, margin)
        area = (-180.0, -90.0, 180.0, 90.0)
    else:
        xpad = _pad(maxx - minx, margin, floor)
        x0, x1 = minx - xpad, maxx + xpad
        aou = area_of_use(crs) if crs is not None else None
        area = aou.bounds if aou is not None else (-math.inf, -math.inf, math.inf, math.inf)
        if x0 < area[0]:
            x0, clipped = min(area[0], obs_w), [*clipped, "west"]
        if x1 > area[2]:
            x1, clipped = max(area[2], obs_e), [*clipped, "east"]
    if y0 < area[1]:
        y0, clipped = min(area[1], miny), [*clipped, "south"]
    if y1 > area[3]:
        y1, clipped = max(area[3], maxy), [*clipped, "north"]
    region = (_down(x0, decimals), _down(y0, decimals), _up(x1, decimals), _up(y1, decimals))
    if geographic:  # rounding outward must not step past ±180 and ±90
        x0, y0, x1, y1 = region
        region = (max(x0, -180.0), max(y0, -90.0), min(x1, 180.0), min(y1, 90.0))
    return DraftRegion(region, (obs_w, miny, obs_e, maxy), decimals, tuple(clipped), crosses)
