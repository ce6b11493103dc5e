"""``contract-gate completion bash|zsh``: a shell completion script generated from the parser.

The script is written by shtab (https://pypi.org/project/shtab/) from the same argparse
tree every command registers in, so it cannot drift from the commands and flags. Install
it with, e.g.::

    contract-gate completion bash > ~/.local/share/bash-completion/completions/contract-gate
    contract-gate completion zsh > "${fpath[1]}/_contract-gate"
"""

from __future__ import annotations

import argparse

from worker.cli.args import PATHS

__all__ = ["SHELLS", "register", "run", "script"]

#: The shells a completion script is generated for.
SHELLS = ("bash", "zsh")

#: zsh: a positional that completes to nothing. shtab writes an empty action (``:help:``)
#: for it, and zsh's ``_arguments`` then only lists the options a ``--pre<TAB>`` matches
#: without inserting the one that does ("( )" is its "no completions" action).
_NOTHING_ZSH = {"zsh": "( )"}

#: The metavars that name a path, so their options complete file names.
_PATH_METAVARS = frozenset({"FILE", "DIR"})


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``completion SHELL``."""
    p = sub.add_parser(
        "completion",
        help="print a bash or zsh completion script for contract-gate",
        description="Print a completion script generated from the command line's parser "
        "(every command, action and flag). bash: save it as "
        "~/.local/share/bash-completion/completions/contract-gate, or `source` it; zsh: save "
        "it as _contract-gate in a directory of $fpath.",
    )
    p.add_argument("shell", choices=SHELLS, help="the shell to complete in")
    p.set_defaults(handler=run)


def script(parser: argparse.ArgumentParser, shell: str) -> str:
    """The completion script of ``parser`` for ``shell`` (one of :data:`SHELLS`).

    Raises
    ------
    ValueError
        ``shell`` is not one of :data:`SHELLS`.
    """
    import shtab

    if shell not in SHELLS:
        raise ValueError(f"{shell!r} is not one of {', '.join(SHELLS)}")
    marked = _mark_values(parser, shell)
    try:
        text: str = shtab.complete(parser, shell=shell)
    finally:  # the parser as it was: a zsh mark would change a later bash script
        for a in marked:
            del a.complete  # type: ignore[attr-defined]
    return text


def _mark_values(parser: argparse.ArgumentParser, shell: str) -> list[argparse.Action]:
    """Give each value argument of the tree without choices or a completion of its own what
    the shell completes for it: file names for ``FILE``/``DIR`` options; nothing, said so
    to zsh, for the other positionals. Returns the arguments marked."""
    from worker.cli.parser_tree import arguments, walk

    marked = []
    for _, p in walk(parser):
        for a in arguments(p):
            if a.nargs == 0 or a.choices is not None or hasattr(a, "complete"):
                continue
            if a.option_strings and a.metavar in _PATH_METAVARS:
                a.complete = PATHS  # type: ignore[attr-defined]
            elif not a.option_strings and shell == "zsh":
                a.complete = _NOTHING_ZSH  # type: ignore[attr-defined]
            else:
                continue
            marked.append(a)
    return marked


def run(args: argparse.Namespace) -> int:
    """Print the script for ``args.shell`` of the whole tree (``args.root_parser``, which
    :func:`worker.cli.main.build_parser` sets, this command included)."""
    print(script(args.root_parser, args.shell), end="")
    return 0
