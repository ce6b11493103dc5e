"""The file's own CRS statement as evidence against a declaration (issue 26, T09 kind).

A file that states its CRS (in any place its format can state one, as its reader in
:mod:`worker.io.formats` reads it: :attr:`worker.io.formats.base.FeatureData.crs_stated`,
named by :attr:`~worker.io.formats.base.FeatureData.crs_source`) contradicting the declared
CRS (the event's ``declared_crs``, ``check --crs``, ``batch publish --crs``) gets
:attr:`worker.core.model.Batch.crs_conflict`, which breaks the crs clause with both named.
"""

from __future__ import annotations

__all__ = ["BY_EVENT", "BY_OPTION", "crs_conflict"]

#: Who declares, in :func:`crs_conflict` sentences: the event (by reference) or the
#: operator's/producer's ``--crs`` (``check``, ``batch publish``).
BY_EVENT = ("the payload's", "the event declares", "the event's declared_crs")
BY_OPTION = ("the file's", "declared (--crs)", "--crs")


def crs_conflict(
    stated: str | None,
    declared: str | None,
    source: str,
    by: tuple[str, str, str] = BY_EVENT,
) -> str | None:
    """The sentence saying that a file's own CRS (``stated``, from its ``source``, the
    label its reader gives the place the file states it, e.g. a sidecar or a metadata
    key) is not the ``declared`` one, or None when
    they agree, when either is absent, or when the file states none (a format default
    such as a format's default CRS is no statement). ``by``: :data:`BY_EVENT` or
    :data:`BY_OPTION`, who declared.

    The declaration is what the clauses use (the producer's word, as for inline
    features), but a file that says otherwise is evidence the declaration is wrong: the
    crs clause breaks with this sentence, for every reader and on every path (a file
    in EPSG:3857 was admitted by reference under an EPSG:4326 contract because its event
    said EPSG:4326, while ``check`` of the same file broke the clause; field case T09: a
    NAD27 file checked with ``--crs EPSG:4326`` was admitted).
    """
    from worker.core.errors import CrsError
    from worker.core.spatial.crs import crs_equivalent, crs_label, resolve_crs

    if stated is None or declared is None:
        return None
    try:
        declared_crs = resolve_crs(declared)
    except CrsError:
        return None  # the crs clause already breaks on an unresolvable declaration
    try:
        stated_crs = resolve_crs(stated)
    except CrsError as exc:
        return f"{by[0]} {source} states a CRS that does not resolve ({exc})"
    if crs_equivalent(stated_crs, declared_crs):
        return None
    return (
        f"{by[0]} {source} states {crs_label(stated_crs)}, not the "
        f"{crs_label(declared_crs)} {by[1]}: fix {by[2]} or the file's CRS"
    )
