"""Contract documents from files (the only place the core's contract parser meets the disk)."""

from __future__ import annotations

from pathlib import Path

from worker.core.contracts.parse import parse_contract
from worker.core.errors import ContractError
from worker.core.model import Contract

__all__ = ["load_contract"]


def load_contract(path: str | Path) -> Contract:
    """Read and parse the contract file at ``path`` (see :func:`parse_contract`).

    Raises
    ------
    ContractError
        The file cannot be read (missing, not UTF-8) or the document is invalid.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ContractError(
            f"{p}: cannot read the contract file: {exc}",
            fix="give the path of a readable UTF-8 contract YAML file",
        ) from None
    return parse_contract(text, source=str(p))
