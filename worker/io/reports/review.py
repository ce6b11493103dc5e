"""Renderings of a contract review (:mod:`worker.core.contracts.review`): text, Markdown, JSON text.

Markdown is what a CI job posts as a pull-request comment: one table row per reviewed
version (file, version, status, computed class, required number, declared class, result),
then the failures and warnings as lists, and the differences of each version in a
collapsed ``<details>`` block (GitHub-flavoured Markdown).
"""

from __future__ import annotations

from worker.core._util.jsonsafe import dumps_json
from worker.core.contracts.classify import render_classification
from worker.core.contracts.review import Review, is_retired_path, review_to_json
from worker.core.contracts.version_review import VersionReview

__all__ = ["render_review_json", "render_review_markdown", "render_review_text"]


def _title(v: VersionReview) -> str:
    name = f"{v.layer} {v.version}" if v.layer else "(not a contract)"
    return f"{name} ({v.path}): {v.status}"


def _summary(r: Review, base: str, head: str) -> str:
    verdict = "FAILED" if r.failed else "passed"
    return (
        f"contract review {base} -> {head}: {verdict}: {len(r.versions)} version(s) reviewed, "
        f"{len(r.failures)} failure(s), {len(r.all_warnings)} warning(s)"
    )


def _declared(v: VersionReview) -> str:
    if v.agrees is None:
        return v.declared or "-"
    return f"{v.declared or '(none)'} ({'agrees' if v.agrees else 'disagrees'})"


def render_review_text(r: Review, base: str, head: str) -> str:
    """Readable text: per version its classification (as ``contract classify`` prints it),
    the required number, the declared class, then FAIL and WARNING lines; a summary last."""
    lines: list[str] = []
    for v in r.versions:
        lines.append(_title(v))
        if v.classification is not None:
            text = render_classification(v.classification, f"{v.predecessor} -> {v.version}")
            lines += ["  " + line for line in text.splitlines()]
            lines.append(f"  required version {v.required}; declared change {_declared(v)}")
        elif v.status == "moved":  # a file moved (e.g. under retired/): nothing changed
            retired = " (under retired/: a retired version)" if is_retired_path(v.path) else ""
            lines.append(f"  the same document under a new path{retired}: nothing to declare")
        elif v.status != "invalid" and v.status != "removed":
            lines.append(f"  first version of {v.layer}: no class to declare")
        if v.mode is not None:
            lines.append(f"  mode {v.mode}" + (f", evidence {v.evidence}" if v.evidence else ""))
        lines += [f"  FAIL: {f}" for f in v.failures]
        lines += [f"  WARNING: {w}" for w in v.warnings]
    lines += [f"WARNING: {w}" for w in r.warnings]
    if not r.versions:
        lines.append("no contract version added, changed or removed")
    lines.append(_summary(r, base, head))
    return "\n".join(lines)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_review_markdown(r: Review, base: str, head: str) -> str:
    """GitHub-flavoured Markdown for a pull-request comment (see the module docstring)."""
    icon = ":x:" if r.failed else ":white_check_mark:"
    out = [f"### {icon} {_cell(_summary(r, f'`{base}`', f'`{head}`'))}", ""]
    if r.versions:
        out += [
            "| file | version | status | computed class | required | declared | result |",
            "|---|---|---|---|---|---|---|",
        ]
        for v in r.versions:
            computed = v.classification.class_ if v.classification else "-"
            result = (
                f"{len(v.failures)} failure(s)"
                if v.failures
                else ("warning" if v.warnings else "ok")
            )
            out.append(
                "| "
                + " | ".join(
                    _cell(x)
                    for x in (
                        f"`{v.path}`",
                        f"{v.layer} {v.version}" if v.layer else "-",
                        v.status,
                        computed,
                        v.required or "-",
                        _declared(v),
                        result,
                    )
                )
                + " |"
            )
        out.append("")
    if r.failures:
        out += ["**Failures**", ""] + [f"- {_cell(f)}" for f in r.failures] + [""]
    if r.all_warnings:
        out += ["**Warnings**", ""] + [f"- {_cell(w)}" for w in r.all_warnings] + [""]
    for v in r.versions:
        if v.classification is None or not v.classification.differences:
            continue
        out += [
            f"<details><summary>{v.layer} {v.predecessor} -> {v.version}: "
            f"{v.classification.class_}</summary>",
            "",
            "| class | clause | kind | reason |",
            "|---|---|---|---|",
        ]
        out += [
            f"| {d.class_} | {_cell(d.clause)} | {d.kind} | {_cell(d.reason)} |"
            for d in v.classification.differences
        ]
        out += ["", "</details>", ""]
    return "\n".join(out).rstrip() + "\n"


def render_review_json(r: Review, base: str, head: str) -> str:
    """:func:`worker.core.contracts.review.review_to_json` with ``base`` and ``head``, indented."""
    return dumps_json({"base": base, "head": head, **review_to_json(r)}, indent=2)
