"""Contract version labels: ``v<major>[.<minor>]`` parsed, majors, and which version
serves a reader (pure).

A version is compared by major where readers are concerned: a declaration of ``v1``,
``v1.0`` or ``v1.1`` is a declaration on major ``v1``, and a record admitted under a later
minor of a major serves a reader built for an earlier one.
"""

from __future__ import annotations

from worker.core.errors import ContractGateError

__all__ = ["major_label", "parse_version", "version_covers"]


def parse_version(text: str) -> tuple[int, int]:
    """``"v7.1"`` -> ``(7, 1)``; ``"v7"`` and ``"7"`` mean ``(7, 0)``.

    Raises
    ------
    ContractGateError
        When ``text`` is not ``v<major>[.<minor>]``.
    """
    body = text.strip()
    body = body[1:] if body[:1] in ("v", "V") else body
    major_s, _, minor_s = body.partition(".")
    try:
        major, minor = int(major_s), int(minor_s or 0)
    except ValueError:
        raise ContractGateError(
            f"{text!r} is not a contract version; write v<major>[.<minor>], e.g. v2 or v1.1"
        ) from None
    if major < 0 or minor < 0:
        raise ContractGateError(f"{text!r}: version numbers are not negative")
    return major, minor


def major_label(version: str | int) -> str:
    """The major a version belongs to, as a label: ``"v1.1"`` -> ``"v1"``."""
    major = version if isinstance(version, int) else parse_version(version)[0]
    return f"v{major}"


def version_covers(enforced: str, built_for: str) -> bool:
    """True when a record admitted under ``enforced`` serves a reader built for ``built_for``.

    Same major, and a minor at least the reader's: later minors and tightenings of a major
    only add guarantees, a different major may change their meaning.
    """
    e_major, e_minor = parse_version(enforced)
    r_major, r_minor = parse_version(built_for)
    return e_major == r_major and e_minor >= r_minor
