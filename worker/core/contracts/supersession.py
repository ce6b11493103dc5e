"""The ``supersedes`` field of a config record, checked (pure; docs/design.md section 5).

A minor published enforcing, or a promoted tightening, supersedes the earlier revisions of
its major. The new version's own record names them, so a worker applies the supersession
with that one record (:class:`worker.core.lifecycle.registry.Registry`).
"""

from __future__ import annotations

import re
from typing import Any

from worker.core._util.text import clip
from worker.core.errors import ContractError
from worker.core.model import Contract

__all__ = ["MAX_SUPERSEDES", "supersedes_of"]

#: Most ``supersedes`` entries one config record may carry (each an earlier revision of
#: the record's major, so a real record holds at most its minor number of them).
MAX_SUPERSEDES = 256


def supersedes_of(value: Any, contract: Contract, source: str) -> tuple[str, ...]:
    """The checked ``supersedes`` of a record of ``contract``: ``layer/version`` keys.

    None or [] gives (). Each entry must be an earlier revision of the same layer and
    major (``parcels/v7.0`` for ``parcels/v7.1``); at most :data:`MAX_SUPERSEDES`.

    Raises
    ------
    ContractError
        Not a list of such keys (the message echoes the first bad entry, clipped).
    """
    if not value:
        return ()
    if not isinstance(value, (list, tuple)) or len(value) > MAX_SUPERSEDES:
        raise ContractError(
            f"{source}: supersedes must be a list of at most {MAX_SUPERSEDES} layer/version keys"
        )
    out = []
    for entry in value:
        m = re.fullmatch(r"([^/]+)/v(\d{1,9})\.(\d{1,9})", entry if isinstance(entry, str) else "")
        if (
            m is None
            or m.group(1) != contract.layer
            or int(m.group(2)) != contract.major
            or int(m.group(3)) >= contract.minor
        ):
            raise ContractError(
                f"{source}: supersedes {clip(str(entry), 80)!r} is not an earlier revision of "
                f"{contract.layer} v{contract.major} (before {contract.version})"
            )
        out.append(f"{m.group(1)}/v{int(m.group(2))}.{int(m.group(3))}")
    return tuple(dict.fromkeys(out))
